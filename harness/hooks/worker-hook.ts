import { unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { Context } from '@temporalio/activity';
import pg from 'pg';
import { ARM_DIR_ENV, HOLD_MS_ENV } from './hook-env';
import type { CrashPhase, CrashPointHook, CrashPointName } from '../../src/activities/crash-points';

/**
 * Preloaded into chaos workers (`node --require tsx/cjs --require harness/hooks/worker-hook.ts
 * --import tsx src/worker.ts`); src/ is untouched. It watches three moments that a crash may hit
 * and random kills almost never do, because each lasts a millisecond or so:
 *
 * - `payment-commit`: the transaction that inserted a payments row has committed, and the
 *   recordPayment activity has not returned yet (so its completion is not reported);
 * - `warehouse-201`: the warehouse answered 201 Created, and notifyWarehouse has not returned;
 * - `mail-stamp`: the SMTP server accepted the confirmation, and `confirmation_sent_at` is not
 *   stamped yet.
 *
 * It also installs the hook of the crash points declared in src (src/activities/crash-points.ts):
 * each is armed as `<point>@<phase>` (`recordPayment.commit@after`), in the same way; the
 * enumerated run (dev/chaos/crash-points.ts) arms them one at a time.
 *
 * The driver arms a moment by creating a file named after it in CHAOS_ARM_DIR. The first worker
 * to reach an armed moment claims it (unlink is atomic: one winner across processes), reports it
 * on file descriptor 3 and freezes its JavaScript thread; the driver SIGKILLs the whole process
 * group on reading the line. If no kill comes within CHAOS_HOLD_MS the worker carries on and says
 * so, and the run reports the miss.
 */

export type ChaosPoint = 'payment-commit' | 'warehouse-201' | 'mail-stamp';
/** A declared crash point with the side of it where the worker dies. */
export type CrashArm = `${CrashPointName}@${CrashPhase}`;

/** The activity the worker is in at a moment (none at a migration or a health check). */
interface ActivityDetails {
  workflowId?: string;
  activityType?: string;
  /** The activity attempt (the one that is about to die, in a hold). */
  attempt?: number;
  /** A local activity (its result travels in the workflow task's completion). */
  local?: boolean;
}

/** What the hook writes on its control channel, one JSON object per line. */
export type HookMessage =
  | ({
      type: 'hold';
      point: ChaosPoint | CrashArm;
      pid: number;
      at: number;
      eventId?: string;
      orderId?: number;
    } & ActivityDetails)
  | { type: 'released'; point: ChaosPoint | CrashArm; pid: number; at: number }
  /**
   * A declared point was passed, armed or not: the enumerated run checks every scenario's path
   * against the points it declares the scenario reaches.
   */
  | ({ type: 'pass'; point: CrashArm; pid: number; at: number } & ActivityDetails);

const CONTROL_FD = 3;
const INSTALLED = Symbol.for('order-payments.chaos-hook');

interface PendingPayment {
  eventId: string;
  orderId: number;
  activity: ActivityDetails;
}

type HoldMessage = Extract<HookMessage, { type: 'hold' }>;
/** What the hook reports about the moment, besides which moment it is. */
type HoldDetails = Omit<HoldMessage, 'type' | 'point' | 'pid' | 'at'>;
type Hold = (point: ChaosPoint | CrashArm, details: HoldDetails) => void;
// The same symbol as src/activities/crash-points.ts's CRASH_POINT_HOOK (Symbol.for: one registry
// per process). Not imported: loading that module here would read the hook before it is set.
const CRASH_POINT_HOOK = Symbol.for('order-payments.crash-point-hook');

// Preloads also run in the SDK's workflow threads and tsx's loader thread; only the main thread
// runs activities.
const armDir = process.env[ARM_DIR_ENV];
const globals = globalThis as { [INSTALLED]?: boolean };
if (isMainThread && armDir && !globals[INSTALLED]) {
  globals[INSTALLED] = true;
  install(armDir, Number(process.env[HOLD_MS_ENV] ?? 5_000));
}

function install(dir: string, holdMs: number): void {
  const hold: Hold = (point, details) => {
    try {
      // Claiming the arm file is the decision: no file (or another worker was faster), no hold.
      unlinkSync(path.join(dir, point));
    } catch {
      return;
    }
    send({ type: 'hold', point, pid: process.pid, at: Date.now(), ...details });
    // Freeze: nothing runs on this thread, so the activity can neither return nor be reported.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, holdMs);
    send({ type: 'released', point, pid: process.pid, at: Date.now() });
  };

  patchPostgres(hold);
  patchFetch(hold);
  const crashPointHook: CrashPointHook = (point, phase) => {
    const details = activityDetails();
    const arm: CrashArm = `${point}@${phase}`;
    send({ type: 'pass', point: arm, pid: process.pid, at: Date.now(), ...details });
    hold(arm, details);
  };
  (globalThis as { [CRASH_POINT_HOOK]?: CrashPointHook })[CRASH_POINT_HOOK] = crashPointHook;
}

/**
 * Watches the SQL that Kysely sends through pg: an insert into payments that returned a row marks
 * its connection; the COMMIT that follows on the same connection is the moment. The stamp of the
 * confirmation mail is caught before it is sent to the server.
 */
function patchPostgres(hold: Hold): void {
  const pending = new WeakMap<object, PendingPayment>();
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with apply(this) below
  const original = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  const patched = function (this: pg.Client, ...args: unknown[]): unknown {
    const [text, values] = args;
    if (typeof text !== 'string' || typeof args[args.length - 1] === 'function') {
      return original.apply(this, args);
    }
    const sql = text.trimStart().toLowerCase();
    if (sql.startsWith('update "orders" set "confirmation_sent_at"')) {
      // The WHERE "id" = $n parameter comes last.
      const params: unknown[] = Array.isArray(values) ? values : [];
      const orderId = params.filter((v): v is number => typeof v === 'number').pop();
      hold('mail-stamp', { orderId, ...activityDetails() });
      return original.apply(this, args);
    }
    const result = original.apply(this, args);
    if (!(result instanceof Promise)) return result;
    if (sql.startsWith('insert into "payments"')) {
      const activity = activityDetails();
      return result.then((r: pg.QueryResult<{ provider_event_id?: string; order_id?: number }>) => {
        const row = r.rows[0];
        if (row?.provider_event_id !== undefined && row.order_id !== undefined) {
          pending.set(this, { eventId: row.provider_event_id, orderId: row.order_id, activity });
        }
        return r;
      });
    }
    if (sql === 'commit') {
      return result.then((r: unknown) => {
        const payment = pending.get(this);
        pending.delete(this);
        if (payment) {
          hold('payment-commit', {
            eventId: payment.eventId,
            orderId: payment.orderId,
            ...payment.activity,
          });
        }
        return r;
      });
    }
    if (sql === 'rollback') pending.delete(this);
    return result;
  };
  pg.Client.prototype.query = patched as typeof pg.Client.prototype.query;
}

/** The warehouse client uses the global fetch; a 201 from /v1/shipments is the moment. */
function patchFetch(hold: Hold): void {
  const original = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const response = await original(input, init);
    const url = input instanceof Request ? input.url : String(input);
    if (response.status === 201 && new URL(url).pathname === '/v1/shipments') {
      const body =
        typeof init?.body === 'string' ? (JSON.parse(init.body) as { order_id?: number }) : {};
      hold('warehouse-201', { orderId: body.order_id, ...activityDetails() });
    }
    return response;
  };
}

function activityDetails(): ActivityDetails {
  try {
    const info = Context.current().info;
    return {
      workflowId: info.workflowExecution?.workflowId,
      activityType: info.activityType,
      attempt: info.attempt,
      local: info.isLocal,
    };
  } catch {
    // Not inside an activity (e.g. a migration or a health check).
    return {};
  }
}

function send(message: HookMessage): void {
  try {
    // Synchronous: the line must be out before the thread freezes.
    writeSync(CONTROL_FD, `${JSON.stringify(message)}\n`);
  } catch {
    // No control channel (the hook was loaded outside the chaos driver): nothing to tell.
  }
}
