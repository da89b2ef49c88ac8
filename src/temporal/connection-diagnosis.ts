import net from 'node:net';
import tls from 'node:tls';
import { Connection } from '@temporalio/client';
import { clientConnectionOptions, type TemporalConnectionSettings } from './connection';

/**
 * Why a connection to Temporal failed, in words an operator can act on. The gRPC client says
 * only "Failed to connect before the deadline" for a refused port, a wrong CA, a refused client
 * certificate or a firewall alike; so after a failure this repeats the connection's steps by
 * hand (TCP, then the TLS handshake with the same CA, name and certificate, then the HTTP/2
 * greeting) and names the first one that fails. Every step is bounded by the caller's timeout.
 * Messages name files and variables, never a key or an API key.
 */
export interface ConnectionDiagnosis {
  /** What is wrong, e.g. "TLS refused: the server certificate has expired". */
  problem: string;
  /** What to change. */
  hint: string;
}

type Settings = Pick<TemporalConnectionSettings, 'tls' | 'apiKey' | 'metadata'>;

/** Connecting failed; `diagnosis` says why and what to change. */
export class TemporalConnectionError extends Error {
  constructor(
    readonly address: string,
    readonly diagnosis: ConnectionDiagnosis,
  ) {
    super(`Cannot connect to Temporal at ${address}: ${diagnosis.problem}`);
    this.name = 'TemporalConnectionError';
  }
}

/**
 * Connection.connect for a person waiting at a terminal (doctor, ops, batch, set-up): the
 * transport is checked beside the attempt, so a refused port or handshake fails in milliseconds
 * with its reason, and anything else fails within `timeoutMs`. Throws TemporalConnectionError.
 */
export async function connectOrDiagnose(
  settings: Settings | undefined,
  options: { address: string; timeoutMs: number },
): Promise<Connection> {
  const diagnosisOptions = { ...options, settings };
  const transport = diagnoseTransport(diagnosisOptions);
  const connecting = Connection.connect(
    clientConnectionOptions(settings, {
      address: options.address,
      connectTimeout: options.timeoutMs,
    }),
  );
  type Outcome =
    { connection: Connection } | { error: unknown } | { diagnosis: ConnectionDiagnosis };
  const attempt: Promise<Outcome> = connecting.then(
    (connection) => ({ connection }),
    (error: unknown) => ({ error }),
  );
  const outcome = await Promise.race<Outcome>([
    attempt,
    transport.then((diagnosis) => (diagnosis ? { diagnosis } : attempt)),
  ]);
  if ('connection' in outcome) return outcome.connection;
  if ('diagnosis' in outcome) {
    // The attempt goes on until its own deadline; close it if it ever gets through.
    void connecting.then(
      (connection) => connection.close(),
      () => undefined,
    );
    throw new TemporalConnectionError(options.address, outcome.diagnosis);
  }
  throw new TemporalConnectionError(
    options.address,
    await diagnoseConnectionFailure(outcome.error, diagnosisOptions, transport),
  );
}

const GRPC_UNAUTHENTICATED = 16;
const GRPC_PERMISSION_DENIED = 7;
/** The HTTP/2 client preface and an empty SETTINGS frame: a gRPC server answers with its SETTINGS. */
const H2_GREETING = Buffer.concat([
  Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
  Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]),
]);

export interface DiagnosisOptions {
  address: string;
  settings: Settings | undefined;
  timeoutMs: number;
}

/**
 * The transport steps alone (TCP, TLS, HTTP/2 greeting): the first that fails, or undefined when
 * all pass. Cheap enough to run beside every connection attempt, so a refused port or handshake
 * is reported at once instead of after the gRPC client's deadline.
 */
export async function diagnoseTransport(
  options: DiagnosisOptions,
): Promise<ConnectionDiagnosis | undefined> {
  const { host, port } = splitAddress(options.address);
  const deadline = Date.now() + options.timeoutMs;
  const within = seconds(deadline, options.timeoutMs);
  const tcp = await tcpStep(host, port, deadline, within);
  if (tcp) return tcp;
  const tlsSettings = options.settings?.tls;
  return tlsSettings
    ? tlsStep(host, port, tlsSettings, deadline, within)
    : plainStep(host, port, deadline);
}

/** Why `error` (from connecting or a first call) happened: the gRPC status, else the transport. */
export async function diagnoseConnectionFailure(
  error: unknown,
  options: DiagnosisOptions,
  transport: Promise<ConnectionDiagnosis | undefined> = diagnoseTransport(options),
): Promise<ConnectionDiagnosis> {
  const fromGrpc = grpcDiagnosis(error, options.settings);
  if (fromGrpc) return fromGrpc;
  const fromTransport = await transport;
  if (fromTransport) return fromTransport;
  const message = messageOf(error);
  if (/deadline|timeout|timed out/i.test(message)) {
    return {
      problem: `a connection opens, but Temporal does not answer within ${seconds(0, options.timeoutMs)}`,
      hint: 'check that TEMPORAL_ADDRESS is the Temporal frontend’s gRPC port (usually 7233), not the Web UI or another service',
    };
  }
  return {
    problem: `connected, but the gRPC call failed: ${message}`,
    hint: 'check that TEMPORAL_ADDRESS is the Temporal frontend’s gRPC port (usually 7233)',
  };
}

/** The gRPC status in an error or its causes (the client wraps it). */
export function grpcCode(error: unknown): number | undefined {
  return grpcStatus(error)?.code;
}

/**
 * The gRPC status in an error or its first four causes, with what the server said: its details,
 * or the message when it sent none.
 */
export function grpcStatus(error: unknown): { code: number; details: string } | undefined {
  for (let e = error, depth = 0; e && depth < 5; depth += 1) {
    const { code, details, message } = e as {
      code?: unknown;
      details?: unknown;
      message?: unknown;
    };
    if (typeof code === 'number') {
      return { code, details: typeof details === 'string' && details ? details : String(message) };
    }
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** UNAUTHENTICATED and PERMISSION_DENIED: the server answered, and said no. */
export function grpcDiagnosis(
  error: unknown,
  settings: Settings | undefined,
): ConnectionDiagnosis | undefined {
  const code = grpcCode(error);
  if (code === GRPC_UNAUTHENTICATED) {
    return {
      problem: settings?.apiKey
        ? 'unauthenticated: the server refused the API key'
        : 'unauthenticated: the server wants credentials and none were sent',
      hint: settings?.apiKey
        ? 'check TEMPORAL_API_KEY (or api_key in the profile): a current key of an account with access to this namespace'
        : 'set TEMPORAL_API_KEY, or a client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH and _KEY_PATH)',
    };
  }
  if (code === GRPC_PERMISSION_DENIED) {
    return {
      problem: 'permission denied: the credentials are valid but not for this namespace or call',
      hint: 'grant the key or certificate access to TEMPORAL_NAMESPACE, or use one that has it',
    };
  }
  return undefined;
}

function tcpStep(
  host: string,
  port: number,
  deadline: number,
  within: string,
): Promise<ConnectionDiagnosis | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({
        problem: `no TCP connection to ${host}:${port} within ${within} (a firewall drops it, or the host is down)`,
        hint: 'check TEMPORAL_ADDRESS and that this machine may reach that port',
      });
    }, remaining(deadline));
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(tcpProblem(host, port, err));
    });
  });
}

function tcpProblem(host: string, port: number, err: NodeJS.ErrnoException): ConnectionDiagnosis {
  switch (err.code) {
    case 'ECONNREFUSED':
      return {
        problem: `unreachable: nothing listens on ${host}:${port} (connection refused)`,
        hint: 'check TEMPORAL_ADDRESS (host:port of the frontend) and that Temporal is up',
      };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return {
        problem: `unreachable: the host name ${host} does not resolve (${err.code})`,
        hint: 'check the host in TEMPORAL_ADDRESS and this machine’s DNS',
      };
    default:
      return {
        problem: `unreachable: ${host}:${port}: ${err.code ?? err.message}`,
        hint: 'check TEMPORAL_ADDRESS and the network between here and Temporal',
      };
  }
}

/**
 * The handshake as the SDK makes it, then the HTTP/2 greeting: under TLS 1.3 a server that
 * refuses the client's certificate says so only after the handshake, in answer to the first data.
 */
function tlsStep(
  host: string,
  port: number,
  settings: NonNullable<Settings['tls']>,
  deadline: number,
  within: string,
): Promise<ConnectionDiagnosis | undefined> {
  const serverName = settings.serverName ?? (net.isIP(host) ? undefined : host);
  return new Promise((resolve) => {
    let handshaken = false;
    const socket = tls.connect({
      host,
      port,
      ...(serverName ? { servername: serverName } : {}),
      ...(settings.serverCa ? { ca: Buffer.from(settings.serverCa.pem) } : {}),
      ...(settings.clientCert && settings.clientKey
        ? {
            cert: Buffer.from(settings.clientCert.pem),
            key: Buffer.from(settings.clientKey.reveal()),
          }
        : {}),
      ALPNProtocols: ['h2'],
      // Checked against the name the SDK checks (TEMPORAL_TLS_SERVER_NAME, else the host).
      checkServerIdentity: (_host, cert) => tls.checkServerIdentity(serverName ?? host, cert),
    });
    const finish = (result: ConnectionDiagnosis | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(
      () =>
        finish({
          problem: handshaken
            ? 'TLS handshake done, but the server did not answer over HTTP/2 in time'
            : `no TLS handshake with ${host}:${port} within ${within}`,
          hint: 'check that TEMPORAL_ADDRESS is the Temporal frontend’s gRPC port',
        }),
      remaining(deadline),
    );
    socket.once('secureConnect', () => {
      handshaken = true;
      socket.write(H2_GREETING);
    });
    socket.once('data', () => finish(undefined));
    socket.once('error', (err: NodeJS.ErrnoException) =>
      finish(tlsProblem(err, settings, serverName ?? host, handshaken)),
    );
    socket.once('close', () => {
      if (handshaken) finish(clientCertificateRefused(settings));
    });
  });
}

const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
]);

function tlsProblem(
  err: NodeJS.ErrnoException,
  settings: NonNullable<Settings['tls']>,
  name: string,
  handshaken: boolean,
): ConnectionDiagnosis {
  const code = err.code ?? '';
  if (UNTRUSTED.has(code)) {
    return {
      problem: `TLS refused: server certificate not signed by ${settings.serverCa ? `the CA in ${settings.serverCa.name}` : 'a CA this system trusts'}`,
      hint: `set TEMPORAL_TLS_SERVER_CA_CERT_PATH to the CA that issued the frontend’s certificate (${code})`,
    };
  }
  if (code === 'CERT_HAS_EXPIRED') {
    return {
      problem: 'TLS refused: the server certificate has expired',
      hint: 'renew the Temporal frontend’s certificate',
    };
  }
  if (code === 'CERT_NOT_YET_VALID') {
    return {
      problem: 'TLS refused: the server certificate is not valid yet',
      hint: 'check the clocks here and on the server, or the certificate’s start date',
    };
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return {
      problem: `TLS refused: the server certificate is not for ${name} (${err.message.replace(/^.*?: /, '')})`,
      hint: 'set TEMPORAL_TLS_SERVER_NAME to a name the certificate holds',
    };
  }
  const text = err.message;
  if (/alert certificate required/i.test(text)) {
    return {
      problem: 'TLS refused: the server requires a client certificate (mTLS); none was sent',
      hint: 'set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH',
    };
  }
  if (
    /alert (unknown ca|bad certificate|certificate unknown|certificate expired|certificate revoked|access denied|decrypt error)/i.test(
      text,
    )
  ) {
    return clientCertificateRefused(settings);
  }
  if (
    /wrong version number|packet length too long|unknown protocol|unexpected eof/i.test(text) &&
    !handshaken
  ) {
    return {
      problem: 'no TLS handshake: the server answered in plain text',
      hint: 'this server does not use TLS: set TEMPORAL_TLS=false and remove the TLS settings, or check the port',
    };
  }
  if (handshaken || code === 'ECONNRESET') return clientCertificateRefused(settings);
  return {
    problem: `TLS handshake failed: ${code || text}`,
    hint: 'check the TLS settings (TEMPORAL_TLS_*) against the server’s',
  };
}

function clientCertificateRefused(settings: NonNullable<Settings['tls']>): ConnectionDiagnosis {
  if (!settings.clientCert) {
    return {
      problem:
        'TLS refused: the server closed the connection (it may require a client certificate)',
      hint: 'set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH if it uses mTLS',
    };
  }
  return {
    problem: `TLS refused: the server rejected the client certificate ${settings.clientCert.subject}`,
    hint: `it is not signed by a CA the frontend trusts, or expired or revoked: replace ${settings.clientCert.name}`,
  };
}

/** Without TLS settings: does the server expect TLS? A server that completes a handshake does. */
function plainStep(
  host: string,
  port: number,
  deadline: number,
): Promise<ConnectionDiagnosis | undefined> {
  return new Promise((resolve) => {
    const socket = tls.connect({
      host,
      port,
      rejectUnauthorized: false,
      ALPNProtocols: ['h2'],
      ...(net.isIP(host) ? {} : { servername: host }),
    });
    const finish = (result: ConnectionDiagnosis | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish(undefined), Math.min(remaining(deadline), 2_000));
    socket.once('secureConnect', () =>
      finish({
        problem: 'the server speaks TLS, and TLS is not configured here',
        hint: 'set TEMPORAL_TLS=true, and TEMPORAL_TLS_SERVER_CA_CERT_PATH for a private CA (client certificate too if it uses mTLS)',
      }),
    );
    socket.once('error', () => finish(undefined));
  });
}

function splitAddress(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  return {
    host: address.slice(0, at).replace(/^\[|\]$/g, ''),
    port: Number(address.slice(at + 1)),
  };
}

function remaining(deadline: number): number {
  return Math.max(1, deadline - Date.now());
}

/** How long a step had, for its message: "5 s". */
function seconds(deadline: number, timeoutMs?: number): string {
  return `${Math.max(1, Math.round((timeoutMs ?? remaining(deadline)) / 1000))} s`;
}

function messageOf(error: unknown): string {
  const text = (error as { message?: unknown } | null)?.message;
  return typeof text === 'string' ? text : String(error);
}
