/** The modules under mutation, by scope (scopes.cjs). */
export declare const scopes: Record<
  'repositories' | 'intake' | 'activities' | 'workflows' | 'events',
  string[]
>;
