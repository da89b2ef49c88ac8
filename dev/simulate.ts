import { createTool, parseTool, UsageError, wholeNumber } from '../src/cli/command-line';
import { loadConfig } from '../src/config';
import { runMain } from '../src/process/run-main';
import { shipmentIdempotencyKey } from '../src/shared/constants';
import type { WarehouseMode } from '../harness/partners/warehouse-simulator';

/**
 * `npm run simulate -- warehouse <mode>`: switches the failure mode of the warehouse simulator
 * that `npm start` runs (its PUT /_simulator/mode), so an outage can be rehearsed by hand:
 * shipments retried, `npm run ops -- stuck`, `npm run ops -- doctor`, the demo's progress.
 * `warehouse ship <orderId>` plays the warehouse's people shipping the order's parcel (its
 * PUT /_simulator/shipments/{ref}), so a full refund after it meets `already_shipped`.
 */

const MODES = `
Modes (every shipment request, and the warehouse's health endpoint, answers so):
  ok                  shipments are created (the normal state)
  down [status]       5xx, default 503: the server retries (10 s, 30 s, then 120 s) for 30 minutes
  slow [ms]           answers after ms (default 8000, beyond WAREHOUSE_TIMEOUT_MS): attempts time out
  reject [status]     4xx, default 400: not retried; the order is compensated and alerted
  ratelimit [secs]    429 with Retry-After (default 30): the next attempt waits that long
  status              prints the mode now
  ship <orderId>      the order's parcel leaves the warehouse: a full refund now cannot cancel
                      it (409 already_shipped) and asks a person for a return review

The simulator listens on 127.0.0.1:WAREHOUSE_SIMULATOR_PORT (4001 by default), or WAREHOUSE_API_URL
if that is a simulator. Exit codes: 0 done, 1 the simulator did not answer, 2 wrong command line.`;

// A new one each call: commander keeps the option values of a parse on the command.
const commandLine = () =>
  createTool(
    'npm run simulate --',
    "Switches the failure mode of the warehouse simulator that npm start runs, or ships an order's parcel.",
  )
    .usage('warehouse <mode> [value] [--times N]')
    .argument('[partner]', 'warehouse (the one partner simulated)')
    .argument('[mode]', 'ok, down, slow, reject, ratelimit, status or ship (below)')
    .argument('[value]', "the mode's status, milliseconds or seconds; ship's order ID")
    .option(
      '--times <n>',
      'the mode applies to the next n requests, then the simulator is back to ok',
    )
    .addHelpText('after', MODES);

interface Parsed {
  mode: WarehouseMode | 'status' | 'ship';
  times?: number;
  orderId?: number;
}

function parseMode(positionals: string[], options: Record<string, unknown>): Parsed {
  const times = wholeNumber('--times', options.times as string | undefined, 1);
  const [partner, name, value] = positionals;
  if (partner !== 'warehouse') throw new UsageError('Name the partner: warehouse.');
  const number = (fallback: number, min: number, max: number) =>
    wholeNumber(name!, value, min, max) ?? fallback;
  switch (name) {
    case 'ok':
      return { mode: { kind: 'ok' }, times };
    case 'down':
      return { mode: { kind: 'unavailable', status: number(503, 500, 599) }, times };
    case 'slow':
      return { mode: { kind: 'slow', delayMs: number(8_000, 0, 600_000) }, times };
    case 'reject':
      return { mode: { kind: 'reject', status: number(400, 400, 499) }, times };
    case 'ratelimit':
      return { mode: { kind: 'rate_limit', retryAfter: String(number(30, 0, 86_400)) }, times };
    case 'status':
      return { mode: 'status' };
    case 'ship':
      if (times !== undefined) throw new UsageError('ship takes no --times.');
      return { mode: 'ship', orderId: wholeNumber('ship', value ?? '', 1)! };
    default:
      throw new UsageError(name ? `Unknown mode "${name}".` : 'Name a mode.');
  }
}

export async function main(
  argv: readonly string[],
  io = { out: (t: string) => console.log(t), err: (t: string) => console.error(t) },
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const line = await parseTool(commandLine(), parseMode, argv, io);
  if (line.kind === 'exit') return line.code;
  const parsed = line.work;
  const config = loadConfig(env);
  const base = config.WAREHOUSE_API_URL ?? `http://127.0.0.1:${config.WAREHOUSE_SIMULATOR_PORT}`;
  const shipping = parsed.mode === 'ship';
  const url = shipping
    ? new URL(`/_simulator/shipments/${shipmentIdempotencyKey(parsed.orderId!)}`, base)
    : new URL('/_simulator/mode', base);
  let response: Response;
  try {
    response =
      parsed.mode === 'status'
        ? await fetch(url, { signal: AbortSignal.timeout(5_000) })
        : await fetch(url, {
            method: 'PUT',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(
              shipping ? { status: 'shipped' } : { mode: parsed.mode, times: parsed.times },
            ),
            signal: AbortSignal.timeout(5_000),
          });
  } catch (error) {
    const cause = (error as { cause?: { message?: string } }).cause?.message;
    io.err(
      `The warehouse simulator at ${url.origin} did not answer (${cause ?? (error as Error).message}). Is npm start running?`,
    );
    return 1;
  }
  const body = await response.text();
  if (shipping && (response.status === 404 || response.status === 409)) {
    io.err(
      response.status === 404
        ? `The warehouse has no shipment for order ${parsed.orderId}: it was never handed over.`
        : `Order ${parsed.orderId}'s shipment was cancelled: there is nothing to ship.`,
    );
    return 1;
  }
  if (!response.ok) {
    io.err(`The simulator at ${url.origin} answered ${response.status}: ${body}`);
    return 1;
  }
  if (shipping) {
    const shipment = JSON.parse(body) as { shipment_id: string };
    io.out(
      `Warehouse simulator at ${url.origin}: order ${parsed.orderId}'s shipment ${shipment.shipment_id} is shipped.`,
    );
    return 0;
  }
  const state = JSON.parse(body) as { mode: WarehouseMode; times: number | null };
  io.out(
    `Warehouse simulator at ${url.origin}: ${describe(state.mode)}${state.times ? ` for the next ${state.times} request(s)` : ''}.`,
  );
  return 0;
}

function describe(mode: WarehouseMode): string {
  switch (mode.kind) {
    case 'ok':
      return 'ok, shipments are created';
    case 'unavailable':
      return `down, answering ${mode.status}`;
    case 'slow':
      return `slow, answering after ${mode.delayMs} ms`;
    case 'reject':
      return `rejecting with ${mode.status}`;
    case 'rate_limit':
      return `rate limiting, 429 with Retry-After: ${mode.retryAfter}`;
  }
}

if (require.main === module) {
  runMain(() => main(process.argv.slice(2)), { failureExitCode: 1 });
}
