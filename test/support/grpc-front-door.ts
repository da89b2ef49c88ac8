import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';

/**
 * A TLS front door for a real Temporal server in tests: the Temporal CLI dev server speaks only
 * plain text (`temporal server start-dev` has no TLS flags), so this terminates TLS (optionally
 * requiring a client certificate signed by `clientCa`: mTLS), optionally checks an API key the
 * way Temporal Cloud's front end does (`authorization: Bearer <key>`, else gRPC UNAUTHENTICATED),
 * and forwards every gRPC call, trailers included, to the dev server. What a client sees is a
 * real handshake and real server answers, as behind a cluster's TLS-terminating ingress.
 */
export interface FrontDoor {
  /** host:port to point TEMPORAL_ADDRESS at. */
  address: string;
  /** Calls refused for a wrong or missing API key. */
  refusedApiKeys: number;
  close(): Promise<void>;
}

export interface FrontDoorOptions {
  /** host:port of the plain-text server behind it. */
  target: string;
  certPem: string;
  keyPem: string;
  /** When set, only clients with a certificate this CA signed get through the handshake. */
  clientCaPem?: string;
  /** When set, every call must carry `authorization: Bearer <apiKey>`. */
  apiKey?: string;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'host']);

export async function startFrontDoor(options: FrontDoorOptions): Promise<FrontDoor> {
  const upstream = http2.connect(`http://${options.target}`);
  upstream.on('error', () => undefined);
  const server = http2.createSecureServer({
    cert: options.certPem,
    key: options.keyPem,
    ...(options.clientCaPem
      ? { ca: options.clientCaPem, requestCert: true, rejectUnauthorized: true }
      : {}),
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  // Refused handshakes are what the tests provoke: nothing to report.
  server.on('tlsClientError', () => undefined);
  const door: FrontDoor = { address: '', refusedApiKeys: 0, close: async () => undefined };

  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    if (options.apiKey !== undefined && headers.authorization !== `Bearer ${options.apiKey}`) {
      door.refusedApiKeys += 1;
      // A trailers-only gRPC answer, as a server answers a call it refuses outright.
      stream.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': String(16),
          'grpc-message': 'Request unauthorized',
        },
        { endStream: true },
      );
      return;
    }
    const forwarded: http2.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers)) {
      if (name === ':authority' || name === ':scheme' || HOP_BY_HOP.has(name)) continue;
      if (name === 'authorization') continue;
      forwarded[name] = value;
    }
    const call = upstream.request(forwarded);
    call.on('error', () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
    stream.on('close', () => {
      if (!call.closed) call.close(http2.constants.NGHTTP2_CANCEL);
    });
    let trailers: http2.OutgoingHttpHeaders = {};
    call.on('trailers', (received: http2.IncomingHttpHeaders) => {
      trailers = stripPseudo(received);
    });
    call.on('response', (response) => {
      if (stream.closed) return;
      if (response['grpc-status'] !== undefined) {
        // Trailers-only: the status is in the headers and nothing follows.
        stream.respond(stripPseudo(response, true), { endStream: true });
        return;
      }
      stream.respond(stripPseudo(response, true), { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers(trailers));
      call.pipe(stream);
    });
    stream.pipe(call);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  door.address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  door.close = async () => {
    for (const session of sessions) session.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    upstream.close();
  };
  return door;
}

function stripPseudo(
  headers: http2.IncomingHttpHeaders,
  keepStatus = false,
): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(':') && !(keepStatus && name === ':status')) continue;
    if (HOP_BY_HOP.has(name)) continue;
    out[name] = value;
  }
  return out;
}
