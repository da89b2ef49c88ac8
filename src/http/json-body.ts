import type { FastifyInstance } from 'fastify';
import secureJsonParse from 'secure-json-parse';
import { HttpError } from './errors';

/**
 * Fastify's parser refuses `__proto__` and `constructor` keys but calls them "not valid JSON",
 * sending a client after a syntax error that is not there; this one says which rule broke.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  // Every body this app reads is JSON: a text/plain one is answered 415, not parsed as a string
  // that then fails validation with a confusing "expected object, received string".
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') {
      done(new HttpError(400, 'request body is empty'), undefined);
      return;
    }
    try {
      done(
        null,
        secureJsonParse.parse(text, undefined, {
          protoAction: 'error',
          constructorAction: 'error',
        }),
      );
    } catch (error) {
      const poisoned = error instanceof Error && /^Object contains forbidden/.test(error.message);
      done(
        new HttpError(
          400,
          poisoned
            ? 'request body must not contain a __proto__ or constructor key'
            : 'request body is not valid JSON',
        ),
        undefined,
      );
    }
  });
}
