import type { FastifyError, FastifyInstance } from 'fastify';
import { isDatabaseUnavailable } from '../db/connection';

/** An error whose message is safe and useful to show the client, with its status code. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const DATABASE_RETRY_AFTER_SECONDS = 5;

/**
 * Client errors carry a reason, server errors no internals (the log has them, by request ID). A
 * database down or too slow is an outage: 503 with Retry-After, so clients and balancers retry.
 */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | HttpError, request, reply) => {
    if (!(error instanceof HttpError) && isDatabaseUnavailable(error)) {
      request.log.error({ err: error }, 'request failed: database unavailable');
      return reply
        .code(503)
        .header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS))
        .send({ error: 'database temporarily unavailable, please retry', request_id: request.id });
    }
    const status = error.statusCode ?? 500;
    if (error instanceof HttpError) {
      void reply.headers(error.headers);
    }
    if (status >= 500) {
      request.log.error({ err: error }, 'request failed');
      const message = status === 503 ? error.message : 'internal error';
      return reply.code(status).send({ error: message, request_id: request.id });
    }
    request.log.info({ status, reason: error.message }, 'request rejected');
    return reply.code(status).send({ error: clientMessage(error) });
  });

  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: `no route for ${request.method} ${request.url.split('?')[0]}` }),
  );
}

function clientMessage(error: FastifyError | HttpError): string {
  if (error instanceof HttpError) return error.message;
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'request body is too large';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported content type';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'request body is empty';
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return 'request body is not valid JSON';
    default:
      return error.message;
  }
}
