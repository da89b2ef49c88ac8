import { DeadlineExceededError } from '../monitoring/probes';
import { grpcCode } from '../temporal/grpc-status';

/**
 * OK: nothing to do. WARN: works, but look. FAIL: broken; the doctor exits 1. UNKNOWN: could
 * not tell, its call got no answer in time; without a FAIL the doctor exits 4. SKIP: not checked.
 */
export type CheckStatus = 'OK' | 'WARN' | 'FAIL' | 'UNKNOWN' | 'SKIP';

export interface CheckResult {
  check: string;
  status: CheckStatus;
  detail: string;
  /** What to do about it; `-` when nothing. */
  hint: string;
  /** Commands that fix it, printed in full under the table. */
  commands?: string[];
}

export function result(
  check: string,
  status: CheckStatus,
  detail: string,
  hint = '-',
  commands?: string[],
): CheckResult {
  return commands ? { check, status, detail, hint, commands } : { check, status, detail, hint };
}

const GRPC_DEADLINE_EXCEEDED = 4;
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * The call ended by a deadline, not by an answer: ours (withDeadline), gRPC's DEADLINE_EXCEEDED
 * (or its "Failed to connect before the deadline"), fetch's timeout signal, the OS's or the
 * database driver's. Such a call observed nothing: a refused connection or an error the server
 * sent is an answer, and is not this.
 */
export function timedOut(error: unknown): boolean {
  if (grpcCode(error) === GRPC_DEADLINE_EXCEEDED) return true;
  for (let e = error, depth = 0; e && depth < 5; depth += 1) {
    if (e instanceof DeadlineExceededError) return true;
    const { name, code, message } = e as { name?: unknown; code?: unknown; message?: unknown };
    if (name === 'TimeoutError') return true;
    if (typeof code === 'string' && TIMEOUT_CODES.has(code)) return true;
    if (typeof message === 'string' && /deadline|timeout|timed out/i.test(message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** 5000 → "5 s", 500 → "500 ms". */
export function duration(ms: number): string {
  return ms < 1_000 ? `${ms} ms` : `${+(ms / 1_000).toFixed(1)} s`;
}

/** The hint of every UNKNOWN row: what to do first, and what a lasting one means. */
export function againHint(what: string, persists: string): string {
  return `run the doctor again; if ${what} keeps not answering, ${persists}`;
}

/**
 * A check whose call got no answer in time asserts nothing about what it checks: neither OK nor
 * a FAIL. A server that answered (refused, NOT_FOUND, an error) is never this.
 */
export function couldNotTell(
  check: string,
  what: string,
  timeoutMs: number,
  persists: string,
): CheckResult {
  return result(
    check,
    'UNKNOWN',
    `could not tell: ${what} did not answer within ${duration(timeoutMs)}`,
    againHint(what, persists),
  );
}
