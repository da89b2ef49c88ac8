/** The modules under mutation, by scope (scopes.cjs). */
export declare const scopes: Record<string, string[]>;
