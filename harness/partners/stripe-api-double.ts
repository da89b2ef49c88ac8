import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Stripe's API as far as thin events need it (STRIPE_API_BASE_URL points at it): it records each
 * request and answers with the next of `answers`, the last one repeating. Used by the thin-event
 * tests and by the crash run, whose workers fetch thin events' objects from it.
 */
export interface StripeApiDouble {
  url: string;
  requests: Array<{ path: string; authorization: string | undefined }>;
  /** Answers per request, in order; the last one repeats (none: 500). */
  answers: Array<{ status: number; body: unknown }>;
  close(): Promise<void>;
}

export async function startStripeApiDouble(): Promise<StripeApiDouble> {
  const double = { requests: [], answers: [] } as unknown as StripeApiDouble;
  const server: Server = createServer((req: IncomingMessage, res) => {
    double.requests.push({ path: req.url ?? '', authorization: req.headers.authorization });
    const answer = double.answers[Math.min(double.requests.length, double.answers.length) - 1] ?? {
      status: 500,
      body: {},
    };
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  double.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  double.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return double;
}
