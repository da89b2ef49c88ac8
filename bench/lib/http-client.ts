import http, { type IncomingHttpHeaders } from 'node:http';
import { signBody } from '../../src/http/signature';
import { PAYMENT_WEBHOOK_PATH } from '../../src/http/routes/payment-webhook';
import { PAYMENT_SUCCEEDED_EVENT } from '../../src/shared/constants';

/** The secret the benchmark's HTTP processes are configured with (loopback only). */
export const BENCH_WEBHOOK_SECRET = 'bench-webhook-secret-not-for-production';

export interface HttpReply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** POSTs raw bytes over node:http (keep-alive through `agent`) and reads the whole answer. */
export function post(
  origin: string,
  path: string,
  body: Buffer,
  headers: Record<string, string>,
  agent: http.Agent,
): Promise<HttpReply> {
  const url = new URL(path, origin);
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        agent,
        headers: { ...headers, 'content-length': String(body.length) },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

export interface PaymentEvent {
  id: string;
  orderId: number;
  amount: number;
}

/** The provider's delivery of one event: JSON bytes and the signature header over them. */
export function signedDelivery(event: PaymentEvent): {
  body: Buffer;
  headers: Record<string, string>;
} {
  const body = Buffer.from(
    JSON.stringify({
      id: event.id,
      event: PAYMENT_SUCCEEDED_EVENT,
      order_id: event.orderId,
      amount: event.amount,
    }),
  );
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-payment-signature': signBody(body, BENCH_WEBHOOK_SECRET),
    },
  };
}

/** Delivers one signed event to the webhook; throws unless the answer is 200. */
export async function deliver(
  origin: string,
  event: PaymentEvent,
  agent: http.Agent,
): Promise<HttpReply> {
  const { body, headers } = signedDelivery(event);
  const reply = await post(origin, PAYMENT_WEBHOOK_PATH, body, headers, agent);
  if (reply.status !== 200) throw new Error(`webhook answered ${reply.status}: ${reply.body}`);
  return reply;
}

/** A keep-alive agent with exactly `sockets` connections at most (the load's concurrency). */
export function keepAliveAgent(sockets: number): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
}
