import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

/**
 * One line per request, at completion: Fastify's "incoming request" line says nothing more, and
 * logging is a webhook's largest cost after the Temporal start (docs/benchmarks.md, intake).
 */
export class CompletedRequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const fields = { req: request, res: reply, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...fields, err: error }, 'request errored');
    else reply.log.info(fields, 'request completed');
  }
}
