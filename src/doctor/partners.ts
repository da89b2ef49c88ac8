import { connect as connectPlain, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import type { Config } from '../config';
import { errorMessage, withDeadline } from '../monitoring/probes';
import { type CheckResult, couldNotTell, result, timedOut } from './types';

// Activities retry against a down partner until their deadlines: only asking it shows an outage.

/** Where a warehouse API answers whether it is up: part of its contract, served by the simulator. */
export const WAREHOUSE_HEALTH_PATH = '/v1/health';

export interface PartnerTargets {
  /** WAREHOUSE_API_URL, or in development the simulator of npm start. */
  warehouseUrl: string;
  /** SMTP_URL, or in development the SMTP sink of npm start. */
  smtpUrl: string;
  /** Neither was configured: the hint names npm start. */
  local: { warehouse: boolean; smtp: boolean };
}

/** The partners this configuration sends to; undefined in production without them (config fails). */
export function partnerTargets(
  config: Pick<
    Config,
    'WAREHOUSE_API_URL' | 'WAREHOUSE_SIMULATOR_PORT' | 'SMTP_URL' | 'SMTP_SINK_PORT'
  >,
): PartnerTargets {
  return {
    warehouseUrl: config.WAREHOUSE_API_URL ?? `http://127.0.0.1:${config.WAREHOUSE_SIMULATOR_PORT}`,
    smtpUrl: config.SMTP_URL ?? `smtp://127.0.0.1:${config.SMTP_SINK_PORT}`,
    local: { warehouse: !config.WAREHOUSE_API_URL, smtp: !config.SMTP_URL },
  };
}

export async function checkPartners(
  targets: PartnerTargets,
  options: { timeoutMs: number },
): Promise<CheckResult[]> {
  return Promise.all([
    checkWarehouse(targets, options.timeoutMs),
    checkSmtp(targets, options.timeoutMs),
  ]);
}

async function checkWarehouse(targets: PartnerTargets, timeoutMs: number): Promise<CheckResult> {
  const url = new URL(WAREHOUSE_HEALTH_PATH, targets.warehouseUrl);
  const shown = `${url.origin}${url.pathname}`;
  const hint = targets.local.warehouse
    ? 'start the dev stack (npm start); its simulator: npm run simulate -- warehouse ok'
    : 'shipments are retried until the warehouse answers: see npm run ops -- stuck, and ask the partner';
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await response.text().catch(() => '');
    if (response.ok) return result('warehouse', 'OK', `${shown} answered ${response.status}`);
    return result('warehouse', 'FAIL', `${shown} answered ${response.status}`, hint);
  } catch (error) {
    // No answer in time is not an outage seen: a refusal or an error status is.
    if (timedOut(error)) return couldNotTell('warehouse', shown, timeoutMs, hint);
    return result('warehouse', 'FAIL', `${shown}: ${causeOf(error)}`, hint);
  }
}

async function checkSmtp(targets: PartnerTargets, timeoutMs: number): Promise<CheckResult> {
  const url = new URL(targets.smtpUrl);
  const port = Number(url.port || (url.protocol === 'smtps:' ? 465 : 587));
  const shown = `${url.protocol}//${url.hostname}:${port}`;
  const hint = targets.local.smtp
    ? 'start the dev stack (npm start), which runs the SMTP sink'
    : 'confirmations are retried for 2 hours: check the mail server and SMTP_URL';
  try {
    const greeting = await withDeadline('the SMTP server', timeoutMs, () =>
      readGreeting(url.protocol === 'smtps:', url.hostname, port),
    );
    return /^220[ -]/.test(greeting)
      ? result('smtp', 'OK', `${shown} greets: ${greeting}`)
      : result('smtp', 'FAIL', `${shown} greets with "${greeting}", not 220`, hint);
  } catch (error) {
    if (timedOut(error)) return couldNotTell('smtp', shown, timeoutMs, hint);
    return result('smtp', 'FAIL', `${shown}: ${errorMessage(error)}`, hint);
  }
}

/** The server's first line (RFC 5321: "220 <domain> …" when it takes mail), then QUIT. */
function readGreeting(tls: boolean, host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket: Socket = tls
      ? connectTls({ host, port, servername: host })
      : connectPlain({ host, port });
    let received = '';
    // Whatever happens, the probe leaves no socket open.
    const timer = setTimeout(() => socket.destroy(), 10_000).unref();
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      received += chunk;
      const end = received.indexOf('\n');
      if (end < 0) return;
      resolve(received.slice(0, end).trim());
      socket.end('QUIT\r\n');
    });
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      reject(new Error('closed the connection without a greeting'));
    });
  });
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  return errorMessage(cause ?? error);
}
