import path from 'node:path';
import type { ProcessSpec, SupervisedProcess } from './supervisor';
import { ARM_DIR_ENV, HOLD_MS_ENV } from '../hooks/hook-env';

/**
 * The processes under test as the chaos run and the crash-point run start them: the production
 * entries, with the chaos hook preloaded into the workers. One place, so both runs test the same.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const HOOK = path.join(__dirname, '..', 'hooks', 'worker-hook.ts');
const OPERATOR_HOOK = path.join(__dirname, '..', 'hooks', 'operator-hook.ts');

export interface AppEnvironment {
  temporalAddress: string;
  namespace: string;
  databaseUrl: string;
  mailFrom: string;
  warehouseUrl: string;
  smtpUrl: string;
  invoiceDir: string;
  exportDir: string;
  armDir: string;
  holdMs: number;
}

/** The environment of every process under test. */
export function appEnvironment(app: AppEnvironment): NodeJS.ProcessEnv {
  return {
    ...process.env,
    NODE_ENV: 'development',
    LOG_LEVEL: 'info',
    TEMPORAL_ADDRESS: app.temporalAddress,
    TEMPORAL_NAMESPACE: app.namespace,
    DATABASE_URL: app.databaseUrl,
    MAIL_FROM: app.mailFrom,
    WAREHOUSE_API_URL: app.warehouseUrl,
    SMTP_URL: app.smtpUrl,
    INVOICE_DIR: app.invoiceDir,
    EXPORT_DIR: app.exportDir,
    // A failure's alert digest (src/workflows/alert-digest.ts) resolves within seconds, so a run
    // converges (nothing left running) without waiting out the production quiet period.
    ALERT_DIGEST_WINDOW_SECONDS: '1',
    ALERT_DIGEST_QUIET_SECONDS: '2',
    // The sla scenario's order was paid in 2020: late under the longest SLA, which no other
    // scenario's order (minutes old, some never handed over on purpose) ever comes near.
    FULFILMENT_SLA_SECONDS: String(30 * 86_400),
    PAYMENT_SLA_SECONDS: String(30 * 86_400),
    [ARM_DIR_ENV]: app.armDir,
    [HOLD_MS_ENV]: String(app.holdMs),
  };
}

/** A worker entry (src/worker.ts, src/heavy-worker.ts) with the chaos hook preloaded. */
export function hookedWorkerSpec(options: {
  name: string;
  entry: string;
  env: NodeJS.ProcessEnv;
  logDir: string;
  restartDelayMs: number;
  onControlLine: (line: string, worker: SupervisedProcess) => void;
}): ProcessSpec {
  return {
    name: options.name,
    command: process.execPath,
    args: ['--require', 'tsx/cjs', '--require', HOOK, '--import', 'tsx', options.entry],
    env: options.env,
    cwd: ROOT,
    logFile: path.join(options.logDir, `${options.name}.log`),
    restart: true,
    restartDelayMs: options.restartDelayMs,
    onControlLine: options.onControlLine,
  };
}

/** The HTTP process (src/http/server.ts) on `port`, verifying webhooks with `secret`. */
export function httpProcessSpec(options: {
  env: NodeJS.ProcessEnv;
  port: number;
  secret: string;
  logDir: string;
  restartDelayMs: number;
}): ProcessSpec {
  return {
    name: 'http',
    command: process.execPath,
    args: ['--import', 'tsx', 'src/http/server.ts'],
    env: {
      ...options.env,
      HOST: '127.0.0.1',
      PORT: String(options.port),
      // The runs read neither /metrics nor /readyz; a fixed admin port could clash with a
      // stack running beside it.
      ADMIN_ADDRESS: 'off',
      PAYMENT_WEBHOOK_SECRET: options.secret,
    },
    cwd: ROOT,
    logFile: path.join(options.logDir, 'http.log'),
    restart: true,
    restartDelayMs: options.restartDelayMs,
  };
}

/** The process IDs that are still alive (none should be, once a run has returned). */
export function stillAlive(pids: readonly number[]): number[] {
  return pids.filter((pid) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * The operator CLI (src/cli/ops.ts) with the operator hook preloaded: one command, not restarted;
 * its server calls are reported on file descriptor 3.
 */
export function operatorCliSpec(options: {
  name: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  logDir: string;
  onControlLine: (line: string, cli: SupervisedProcess) => void;
}): ProcessSpec {
  return {
    name: options.name,
    command: process.execPath,
    args: [
      '--require',
      'tsx/cjs',
      '--require',
      OPERATOR_HOOK,
      '--import',
      'tsx',
      'src/cli/ops.ts',
    ].concat(options.args),
    env: options.env,
    cwd: ROOT,
    logFile: path.join(options.logDir, `${options.name}.log`),
    restart: false,
    restartDelayMs: 0,
    onControlLine: options.onControlLine,
  };
}
