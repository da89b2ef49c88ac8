import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

/**
 * Fastify writes two lines per request by default: "incoming request" and "request completed".
 * The first says nothing the second does not, and logging is the largest cost of a webhook
 * delivery after the Temporal start itself (docs/benchmarks.md, intake): so one line per request,
 * written when it completes, with the method and URL the first line used to carry.
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
