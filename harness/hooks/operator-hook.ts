import { unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { Connection } from '@temporalio/client';
import { ARM_DIR_ENV, HOLD_MS_ENV } from './hook-env';

/**
 * Preloaded into an operator CLI (`node --require tsx/cjs --require harness/hooks/operator-hook.ts
 * --import tsx src/cli/ops.ts retry …`) by the enumerated crash run; src/ is untouched. Every
 * call the CLI makes to the Temporal server is numbered in the order made, and reported on file
 * descriptor 3 once its answer is in. When the driver armed `call-<n>` (a file in CHAOS_ARM_DIR),
 * the CLI freezes right after the n-th call returned, before it acts on the answer, and the
 * driver SIGKILLs it there: the server did what the call asked, the operator saw nothing.
 */

export type OperatorHookMessage =
  | { type: 'call'; n: number; method: string; pid: number; ok: boolean }
  | { type: 'hold'; n: number; method: string; pid: number };

type RpcCallback = (error: Error | null, response?: Uint8Array) => void;
type RpcImpl = (method: { name: string }, data: Uint8Array, callback: RpcCallback) => void;
type RpcFactory = (this: unknown, options: unknown) => RpcImpl;

const CONTROL_FD = 3;
const armDir = process.env[ARM_DIR_ENV];
if (isMainThread && armDir) install(armDir, Number(process.env[HOLD_MS_ENV] ?? 5_000));

function install(dir: string, holdMs: number): void {
  let calls = 0;
  // Every service of a connection (workflow, operator, health) is built through this factory.
  const factory = Connection as unknown as { generateRPCImplementation: RpcFactory };
  const original = factory.generateRPCImplementation;
  factory.generateRPCImplementation = function (this: unknown, options: unknown): RpcImpl {
    const rpc = original.call(this, options);
    return (method, data, callback) =>
      rpc(method, data, (error, response) => {
        calls += 1;
        const n = calls;
        send({ type: 'call', n, method: method.name, pid: process.pid, ok: !error });
        if (claim(dir, `call-${n}`)) {
          send({ type: 'hold', n, method: method.name, pid: process.pid });
          // Nothing runs on this thread until the SIGKILL: the answer is never acted on.
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, holdMs);
        }
        callback(error, response);
      });
  };
}

/** Claiming the arm file is the decision: unlink is atomic. */
function claim(dir: string, name: string): boolean {
  try {
    unlinkSync(path.join(dir, name));
    return true;
  } catch {
    return false;
  }
}

function send(message: OperatorHookMessage): void {
  try {
    writeSync(CONTROL_FD, `${JSON.stringify(message)}\n`);
  } catch {
    // No control channel: loaded outside the crash run.
  }
}
