import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import type { Connection } from '@temporalio/client';
import { connectClient } from '../temporal/connection';
import type { TemporalConnectionSettings } from '../temporal/connection';
import { grpcCode } from '../temporal/grpc-status';
import { duration, timedOut } from './types';

/**
 * The gRPC client gives one error for a refused port, a wrong CA, a refused client certificate
 * and a firewall: Node's TLS and HTTP/2 go first, as their errors name the cause.
 */
export interface Diagnosis {
  problem: string;
  hint: string;
  /** Nothing answered in time: the doctor could not tell (UNKNOWN), it saw no refusal. */
  timedOut?: boolean;
}

type Settings = Pick<TemporalConnectionSettings, 'tls' | 'apiKey' | 'security'>;

export async function connectOrExplain(
  settings: Settings | undefined,
  options: { address: string; timeoutMs: number },
): Promise<{ connection: Connection } | { diagnosis: Diagnosis }> {
  const diagnosis = await openTransport(options.address, settings, options.timeoutMs);
  if (diagnosis) return { diagnosis };
  try {
    return { connection: await connectClient(settings, options) };
  } catch (error) {
    return { diagnosis: explainCallFailure(error, settings, options.timeoutMs) };
  }
}

/** Why a call failed once the transport worked: the server said no, or said nothing. */
export function explainCallFailure(
  error: unknown,
  settings: Settings | undefined,
  timeoutMs: number,
): Diagnosis {
  const code = grpcCode(error);
  if (code === 16) {
    return settings?.apiKey
      ? {
          problem: 'unauthenticated: the server refused the API key',
          hint: 'check TEMPORAL_API_KEY (or api_key in the profile): a current key of an account with access to this namespace',
        }
      : {
          problem: 'unauthenticated: the server wants credentials and none were sent',
          hint: 'set TEMPORAL_API_KEY, or a client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH and _KEY_PATH)',
        };
  }
  if (code === 7) {
    return {
      problem: 'permission denied: the credentials are valid but not for this namespace or call',
      hint: 'grant the key or certificate access to TEMPORAL_NAMESPACE, or use one that has it',
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  const hint = 'check that TEMPORAL_ADDRESS is the Temporal frontend’s gRPC port (usually 7233)';
  // DEADLINE_EXCEEDED, or the client's "Failed to connect before the deadline": no answer is
  // no evidence. An overloaded server looks the same as a wrong port for 5 s.
  return timedOut(error)
    ? {
        problem: `a connection opens, but Temporal did not answer within ${duration(timeoutMs)}`,
        hint: `Temporal is overloaded, or TEMPORAL_ADDRESS is not its frontend’s gRPC port (usually 7233) but the Web UI or another service`,
        timedOut: true,
      }
    : { problem: `connected, but the gRPC call failed: ${message}`, hint };
}

/** Up to the server's HTTP/2 SETTINGS: TLS 1.3 refuses a client certificate after the handshake. */
function openTransport(
  address: string,
  settings: Settings | undefined,
  timeoutMs: number,
): Promise<Diagnosis | undefined> {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(at + 1));
  const sdk = settings?.tls ? settings.security.reveal().tls : undefined;
  const configured = sdk === true ? {} : sdk || undefined;
  const serverName = configured?.serverNameOverride ?? (net.isIP(host) ? undefined : host);
  const pair = configured?.clientCertPair;
  return new Promise((resolve) => {
    let stage: 'tcp' | 'tls' | 'http2' = 'tcp';
    let session: http2.ClientHttp2Session | undefined;
    const socket = tls.connect({
      host,
      port,
      ALPNProtocols: ['h2'],
      ...(serverName ? { servername: serverName } : {}),
      ...(configured
        ? {
            ca:
              configured.serverRootCACertificate && Buffer.from(configured.serverRootCACertificate),
            ...(pair ? { cert: Buffer.from(pair.crt), key: Buffer.from(pair.key) } : {}),
            checkServerIdentity: (_host, cert) => tls.checkServerIdentity(serverName ?? host, cert),
          }
        : { rejectUnauthorized: false }),
    });
    const finish = (result: Diagnosis | undefined) => {
      clearTimeout(timer);
      session?.destroy();
      socket.destroy();
      resolve(result);
    };
    let timer = setTimeout(
      () =>
        finish({
          problem:
            stage === 'tcp'
              ? `no TCP connection to ${host}:${port} within ${duration(timeoutMs)}`
              : `no TLS handshake with ${host}:${port} within ${duration(timeoutMs)}`,
          hint:
            stage === 'tcp'
              ? 'a firewall drops it, the host is down, or it is overloaded: check TEMPORAL_ADDRESS and that this machine may reach that port'
              : 'the server is overloaded, or is not a TLS server: check TEMPORAL_ADDRESS and the TLS settings',
          timedOut: true,
        }),
      timeoutMs,
    );
    socket.once('connect', () => {
      stage = 'tls';
      // A plain-text server may just wait for the client: the connect after this says the rest.
      if (!configured) {
        clearTimeout(timer);
        timer = setTimeout(() => finish(undefined), 2_000);
      }
    });
    socket.once('secureConnect', () => {
      if (!configured) {
        return finish({
          problem: 'the server speaks TLS, and TLS is not configured here',
          hint: 'set TEMPORAL_TLS=true, and TEMPORAL_TLS_SERVER_CA_CERT_PATH for a private CA (client certificate too if it uses mTLS)',
        });
      }
      stage = 'http2';
      session = http2.connect(`https://${host}:${port}`, { createConnection: () => socket });
      session.once('remoteSettings', () => finish(undefined));
      session.on('error', () => undefined);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      if (stage === 'tcp') finish(tcpProblem(host, port, err));
      else finish(configured ? tlsProblem(err, settings!, serverName ?? host, stage) : undefined);
    });
    socket.once('close', () =>
      finish(stage === 'http2' ? certificateRefused(settings!) : undefined),
    );
  });
}

function tcpProblem(host: string, port: number, err: NodeJS.ErrnoException): Diagnosis {
  if (err.code === 'ECONNREFUSED') {
    return {
      problem: `unreachable: nothing listens on ${host}:${port} (connection refused)`,
      hint: 'check TEMPORAL_ADDRESS (host:port of the frontend) and that Temporal is up',
    };
  }
  return {
    problem: `unreachable: ${host}:${port}: ${err.code ?? err.message}`,
    hint: 'check TEMPORAL_ADDRESS, this machine’s DNS and the network between here and Temporal',
  };
}

const UNTRUSTED =
  /^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|CERT_SIGNATURE_FAILURE|CERT_UNTRUSTED)$/;

function tlsProblem(
  err: NodeJS.ErrnoException,
  settings: Settings,
  name: string,
  stage: 'tls' | 'http2',
): Diagnosis {
  const code = err.code ?? '';
  if (UNTRUSTED.test(code)) {
    const ca = settings.tls?.serverCa;
    return {
      problem: `TLS refused: server certificate not signed by ${ca ? `the CA in ${ca}` : 'a CA this system trusts'}`,
      hint: `set TEMPORAL_TLS_SERVER_CA_CERT_PATH to the CA that issued the frontend’s certificate (${code})`,
    };
  }
  if (code === 'CERT_HAS_EXPIRED') {
    return {
      problem: 'TLS refused: the server certificate has expired',
      hint: 'renew the Temporal frontend’s certificate',
    };
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return {
      problem: `TLS refused: the server certificate is not for ${name} (${err.message.replace(/^.*?: /, '')})`,
      hint: 'set TEMPORAL_TLS_SERVER_NAME to a name the certificate holds',
    };
  }
  if (/alert certificate required/i.test(err.message)) {
    return {
      problem: 'TLS refused: the server requires a client certificate (mTLS); none was sent',
      hint: 'set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH',
    };
  }
  if (
    stage === 'tls' &&
    /wrong version number|packet length too long|unknown protocol|unexpected eof/i.test(err.message)
  ) {
    return {
      problem: 'no TLS handshake: the server answered in plain text',
      hint: 'this server does not use TLS: set TEMPORAL_TLS=false and remove the TLS settings, or check the port',
    };
  }
  if (stage === 'http2' || code === 'ECONNRESET' || /alert/i.test(err.message)) {
    return certificateRefused(settings);
  }
  return {
    problem: `TLS handshake failed: ${err.message}`,
    hint: 'check the TLS settings (TEMPORAL_TLS_*) against the server’s',
  };
}

function certificateRefused(settings: Settings): Diagnosis {
  const cert = settings.tls?.clientCert;
  return cert
    ? {
        problem: `TLS refused: the server rejected the client certificate ${cert.subject}`,
        hint: `it is not signed by a CA the frontend trusts, or expired or revoked: replace ${cert.name}`,
      }
    : {
        problem:
          'TLS refused: the server closed the connection (it may require a client certificate)',
        hint: 'set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH if it uses mTLS',
      };
}
