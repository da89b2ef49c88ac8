import type { FastifyInstance, FastifySchemaCompiler, FastifyTypeProvider } from 'fastify';
import type { z } from 'zod';
import { HttpError } from './errors';

/**
 * Fastify's own extension point (a validator compiler and a type provider) for zod route
 * schemas; `fastify-type-provider-zod` would bring @fastify/swagger and openapi-types as peers.
 */
export interface ZodTypeProvider extends FastifyTypeProvider {
  validator: this['schema'] extends z.ZodType ? z.output<this['schema']> : unknown;
  serializer: this['schema'] extends z.ZodType ? z.input<this['schema']> : unknown;
}

/** A body names the fields that failed; a URL parameter or header names itself in its message. */
const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> =
  ({ schema, httpPart }) =>
  (data) => {
    const result = schema.safeParse(data);
    if (result.success) return { value: result.data };
    return {
      error: new HttpError(400, formatIssues(result.error, { paths: httpPart === 'body' })),
    };
  };

/** In the plugin's own context: each route plugin stands alone (registered by app or test). */
export function withZodSchemas(app: FastifyInstance) {
  app.setValidatorCompiler(zodValidatorCompiler);
  return app.withTypeProvider<ZodTypeProvider>();
}

/** Each field once: several checks can fail on one value (int() and max() both refuse 2^53). */
export function formatIssues(error: z.ZodError, { paths = true } = {}): string {
  const firstByPath = new Map<string, string>();
  for (const issue of error.issues) {
    const path = issue.path.map(String).join('.');
    if (firstByPath.has(path)) continue;
    firstByPath.set(path, paths && path.length > 0 ? `${path}: ${issue.message}` : issue.message);
  }
  return [...firstByPath.values()].slice(0, 5).join('; ');
}
