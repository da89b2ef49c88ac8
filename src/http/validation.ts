import type { FastifyInstance, FastifySchemaCompiler, FastifyTypeProvider } from 'fastify';
import type { z } from 'zod';
import { HttpError } from './errors';

/**
 * Route schemas are zod schemas, declared once on the route (`schema: { body, params, headers }`):
 * Fastify runs them before the handler (after onRequest, the body parser and preValidation, so
 * an API key or a webhook signature is checked first), and the handler receives the parsed,
 * typed value. This is Fastify's own extension point, a validator compiler and a type provider;
 * `fastify-type-provider-zod` does the same with @fastify/swagger and openapi-types as required
 * peers, which this service does not use.
 */
export interface ZodTypeProvider extends FastifyTypeProvider {
  validator: this['schema'] extends z.ZodType ? z.output<this['schema']> : unknown;
  serializer: this['schema'] extends z.ZodType ? z.input<this['schema']> : unknown;
}

/**
 * A failed check becomes a 400 whose reason the one error handler sends as it is. A body names
 * the fields that failed (`total_amount: …`); a URL parameter or a header names itself in its
 * message, so its reason is the message alone.
 */
const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> =
  ({ schema, httpPart }) =>
  (data) => {
    const result = schema.safeParse(data);
    if (result.success) return { value: result.data };
    return {
      error: new HttpError(400, formatIssues(result.error, { paths: httpPart === 'body' })),
    };
  };

/**
 * A plugin's routes with zod schemas: sets the validator compiler in the plugin's own context
 * (each route plugin stands alone, registered by the app or by a test) and types its routes.
 */
export function withZodSchemas(app: FastifyInstance) {
  app.setValidatorCompiler(zodValidatorCompiler);
  return app.withTypeProvider<ZodTypeProvider>();
}

/**
 * A short, client-facing summary of what failed validation: each field once, with its first
 * problem, for the first few fields. Several checks can fail on one value (zod's int() and
 * max() both refuse 2^53), and naming the same field twice only reads as two problems.
 */
export function formatIssues(error: z.ZodError, { paths = true } = {}): string {
  const firstByPath = new Map<string, string>();
  for (const issue of error.issues) {
    const path = issue.path.map(String).join('.');
    if (firstByPath.has(path)) continue;
    firstByPath.set(path, paths && path.length > 0 ? `${path}: ${issue.message}` : issue.message);
  }
  return [...firstByPath.values()].slice(0, 5).join('; ');
}
