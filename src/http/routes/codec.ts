import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { z } from 'zod';
import { HttpError } from '../errors';
import { withZodSchemas } from '../validation';

export interface CodecRouteOptions {
  codec: PayloadCodec;
  /** Origins allowed to call from a browser: the Temporal Web UI's. */
  allowedOrigins: readonly string[];
  authToken: string | undefined;
}

const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');
const bodySchema = z.object({
  payloads: z
    .array(z.object({ metadata: z.record(z.string(), base64).optional(), data: base64.optional() }))
    .max(1000),
});

/** For the Web UI's origin only, behind a bearer token when set: whoever calls it reads the data. */
export async function codecRoutes(fastify: FastifyInstance, options: CodecRouteOptions) {
  const app = withZodSchemas(fastify);
  const cors = (request: FastifyRequest, reply: FastifyReply) => {
    const origin = request.headers.origin;
    if (origin && options.allowedOrigins.includes(origin)) {
      void reply
        .header('access-control-allow-origin', origin)
        .header('access-control-allow-credentials', 'true')
        .header('access-control-allow-methods', 'POST, OPTIONS')
        .header('access-control-allow-headers', 'content-type, x-namespace, authorization')
        .header('vary', 'origin');
    }
  };

  // On every reply of these routes, errors included (a body too large or not JSON fails before
  // the handler runs): without the headers the browser hides the status and reason behind a
  // CORS error.
  app.addHook('onRequest', async (request, reply) => cors(request, reply));

  for (const action of ['encode', 'decode'] as const) {
    app.options(`/codec/${action}`, async (_request, reply) => reply.code(204).send());
    const route = {
      bodyLimit: 4 * 1024 * 1024,
      schema: { body: bodySchema },
      // The token before the body is read, let alone validated: no 400 tells a stranger anything.
      onRequest: async (request: FastifyRequest) => {
        if (options.authToken && !hasToken(request, options.authToken)) {
          throw new HttpError(401, 'a valid bearer token is required');
        }
      },
    };
    app.post(`/codec/${action}`, route, async (request) => {
      const payloads: Payload[] = request.body.payloads.map((p) => ({
        metadata: Object.fromEntries(
          Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]),
        ),
        data: Buffer.from(p.data ?? '', 'base64'),
      }));
      let result: Payload[];
      try {
        result =
          action === 'encode'
            ? await options.codec.encode(payloads)
            : await options.codec.decode(payloads);
      } catch (err) {
        throw new HttpError(
          400,
          `cannot ${action}: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      return {
        payloads: result.map((p) => ({
          metadata: Object.fromEntries(
            Object.entries(p.metadata ?? {}).map(([k, v]) => [
              k,
              Buffer.from(v).toString('base64'),
            ]),
          ),
          data: Buffer.from(p.data ?? []).toString('base64'),
        })),
      };
    });
  }
}

function hasToken(request: FastifyRequest, token: string): boolean {
  const header = request.headers.authorization ?? '';
  const given = Buffer.from(header.startsWith('Bearer ') ? header.slice(7) : '');
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
