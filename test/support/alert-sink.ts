import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What an alert post carries (src/activities/alert-activities.ts). */
export interface AlertBody {
  text: string;
  alert: Record<string, unknown> & { kind: string };
}

/** A post the sink answered 200: its Idempotency-Key, headers, JSON body, and when it came. */
export interface SinkPost<Body> {
  key: string | undefined;
  at: number;
  headers: IncomingHttpHeaders;
  body: Body;
}

/** A local HTTP endpoint standing in for the Slack-compatible alert sink. */
export interface AlertSink<Body = AlertBody> {
  url: string;
  /** Every post it answered 200, repeats included. */
  received: SinkPost<Body>[];
  /** The first post of each Idempotency-Key: what a sink that honours keys shows. */
  kept: Map<string, SinkPost<Body>>;
  /** The kept posts, and all received, whose key starts with `prefix` (one workflow's). */
  keptUnder(prefix: string): SinkPost<Body>[];
  receivedUnder(prefix: string): SinkPost<Body>[];
  /** Status to answer with (200 unless told otherwise). */
  status: number;
  close(): Promise<void>;
}

export interface AlertSinkOptions {
  /** Dates each post: the time-skipping server's clock where a test needs it. */
  now?: () => Promise<number> | number;
  /** Refuse (400) a post without an Idempotency-Key, as docs/exactly-once.md relies on keys. */
  keyRequired?: boolean;
}

export async function startAlertSink<Body = AlertBody>({
  now = Date.now,
  keyRequired = false,
}: AlertSinkOptions = {}): Promise<AlertSink<Body>> {
  const under = (posts: Iterable<SinkPost<Body>>, prefix: string) =>
    [...posts].filter((post) => post.key?.startsWith(prefix));
  const sink: AlertSink<Body> = {
    url: '',
    received: [],
    kept: new Map(),
    keptUnder: (prefix) => under(sink.kept.values(), prefix),
    receivedUnder: (prefix) => under(sink.received, prefix),
    status: 200,
    close: () => Promise.resolve(),
  };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      void Promise.resolve(now()).then((at) => {
        const key = request.headers['idempotency-key'];
        const status = keyRequired && typeof key !== 'string' ? 400 : sink.status;
        if (status === 200) {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Body;
          const post = { key: key as string | undefined, at, headers: request.headers, body };
          sink.received.push(post);
          if (post.key !== undefined && !sink.kept.has(post.key)) sink.kept.set(post.key, post);
        }
        response.writeHead(status).end('ok');
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  sink.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/alerts`;
  sink.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return sink;
}
