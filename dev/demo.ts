import { randomBytes } from 'node:crypto';
import { Client } from '@temporalio/client';
import { Option } from 'commander';
import { createTool, parseTool } from '../src/cli/command-line';
import { optionalTsToDate } from '@temporalio/common/lib/time';
import { embeddedTemporalAddress, loadConfig } from '../src/config';
import { orderWorkflowId } from '../src/shared/order';
import { connectClient } from '../src/temporal/connection';
import { localHttpUrl } from '../src/net/addresses';
import {
  type DeliveryOptions,
  type ProviderEvent,
  type ProviderName,
  type ProviderPlayer,
  providerPlayer,
  PROVIDERS,
  type Reply,
} from '../harness/providers/player';

/**
 * `npm run demo [-- --provider payment|stripe|standard]`: plays a payment provider against the
 * stack that `npm start` runs. Creates an order, delivers its payment the way that provider does
 * (twice, out of order, with events we ignore, a replay and a forgery), then shows that one
 * payment and one shipment came out of it.
 */
const config = loadConfig();
const commandLine = createTool(
  'npm run demo --',
  'Plays a payment provider against the stack that npm start runs: creates an order, delivers ' +
    'its payment twice, out of order, with ignored events, a replay and a forgery, then shows ' +
    'the one payment and the one shipment that came out of it.',
)
  .addOption(
    new Option('--provider <name>', 'the provider whose webhooks are played')
      .choices(PROVIDERS)
      .default('payment'),
  )
  .addHelpText(
    'after',
    `
Environment: DEMO_BASE_URL (default: the HTTP server of npm start), DEMO_API_KEY (a key with
orders:write and orders:read, when ORDERS_API_KEYS is set), DEMO_WAIT_SECONDS (how long to watch
the order, default 60), DEMO_UI_URL (the Temporal Web UI of the links).`,
  );
const baseUrl = process.env.DEMO_BASE_URL ?? localHttpUrl(config.HOST, config.PORT);
// Without ORDERS_API_KEYS, `npm start` on loopback serves the orders API without a key; with
// keys, the demo needs one with orders:write and orders:read.
const apiKey = process.env.DEMO_API_KEY;
const apiAuth: Record<string, string> = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
// How long the demo watches the order before it leaves it to its retries.
const waitSeconds = Number(process.env.DEMO_WAIT_SECONDS ?? 60) || 60;
const uiBase =
  process.env.DEMO_UI_URL ??
  config.TEMPORAL_UI_URL?.replace(/\/+$/, '') ??
  `http://localhost:${config.TEMPORAL_UI_PORT}`;

async function main(): Promise<void> {
  const line = await parseTool(commandLine, (_args, options) => options.provider as ProviderName);
  if (line.kind === 'exit') {
    process.exitCode = line.code;
    return;
  }
  const player = providerPlayer(line.work, baseUrl, config);
  const suffix = randomBytes(4).toString('hex');

  const orderResponse = await post(
    '/api/v1/orders',
    { user_id: 1, customer_email: 'buyer@example.com', total_amount: 5400 },
    { 'idempotency-key': `demo-order-${suffix}`, ...apiAuth },
  );
  if (orderResponse.status === 401 || orderResponse.status === 403)
    throw new Error(
      `the orders API wants a key (${orderResponse.status} ${orderResponse.text}): set DEMO_API_KEY to a key of ORDERS_API_KEYS with orders:write+orders:read`,
    );
  if (orderResponse.status !== 201)
    throw new Error(`could not create an order: ${orderResponse.status} ${orderResponse.text}`);
  const order = JSON.parse(orderResponse.text) as { id: number };
  const currency = player.name === 'payment' ? '' : ` ${config.SHOP_CURRENCY.toUpperCase()}`;
  console.log(`Created order ${order.id} (amount 5400${currency}).\n`);

  const { payment, deliveries } = scenario(player, order.id);
  console.log(
    player.name === 'payment' ? 'Webhook deliveries:' : `Webhook deliveries (POST ${player.path}):`,
  );
  const width = player.name === 'payment' ? 36 : 56;
  for (const [label, send] of deliveries) {
    const replies = await send();
    console.log(
      `  ${label.padEnd(width)} -> ${replies.map((r) => `${r.status} ${r.text}`).join(' | ')}`,
    );
  }

  console.log(`\nWaiting for the shipment of order ${order.id} (up to ${waitSeconds} s):`);
  const progress = await warehouseProgress(order.id);
  let final: OrderView;
  try {
    final = await waitForShipment(order.id, () => progress.report());
  } finally {
    await progress.close();
  }
  console.log(
    `\nOrder ${order.id}: status=${final.status}, shipment_status=${final.shipment_status ?? 'not yet'}, payments recorded=${final.payments.length}`,
  );
  if (final.shipment_status === null) {
    console.log(
      progress.retrying
        ? `The warehouse has not taken it yet: the order's workflow keeps retrying it (up to 30 minutes), then fails and alerts.\n` +
            `Watch it: npm run ops -- stuck    Bring the simulator back: npm run simulate -- warehouse ok`
        : 'No shipment yet and no warehouse attempt seen: is a worker of the current build running? npm run ops -- doctor',
    );
  }
  const warehouse = await warehouseCalls(order.id);
  if (warehouse !== undefined)
    console.log(`Warehouse simulator: ${warehouse} shipment request(s) for order ${order.id}`);
  const link = (workflowId: string) =>
    `${uiBase}/namespaces/${config.TEMPORAL_NAMESPACE}/workflows/${encodeURIComponent(workflowId)}`;
  console.log(
    `\nSee it in the Temporal Web UI:\n  the order      ${link(orderWorkflowId(order.id))}\n  the payment    ${link(player.workflowId(payment))}`,
  );
}

/**
 * The order workflow's warehouse call as the server schedules it, printed when it changes:
 * attempt, last failure, next retry. Without Temporal (another address, a secured cluster the
 * demo cannot reach), the demo goes on without it.
 */
async function warehouseProgress(orderId: number) {
  const state = { retrying: false, last: '' };
  let client: Client | undefined;
  try {
    const connection = await connectClient(config.temporalConnection, {
      address: config.TEMPORAL_ADDRESS ?? embeddedTemporalAddress(config),
      timeoutMs: 3_000,
    });
    client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  } catch {
    client = undefined;
  }
  return {
    get retrying() {
      return state.retrying;
    },
    async report() {
      if (!client) return;
      let pending;
      try {
        const described = await client.workflow.getHandle(orderWorkflowId(orderId)).describe();
        pending = described.raw.pendingActivities?.find(
          (a) => a.activityType?.name === 'notifyWarehouse',
        );
      } catch {
        return;
      }
      if (!pending || (pending.attempt ?? 1) < 2) return;
      state.retrying = true;
      const of = pending.maximumAttempts ? ` of ${pending.maximumAttempts}` : '';
      const failure = pending.lastFailure?.message ?? 'failed';
      const next = optionalTsToDate(pending.nextAttemptScheduleTime);
      const when = pending.paused
        ? 'paused by an operator'
        : next
          ? `next in ${Math.max(0, Math.round((next.getTime() - Date.now()) / 1000))} s`
          : 'running now';
      const line = `  warehouse: attempt ${pending.attempt}${of} next, last: ${failure}; ${when}`;
      const key = `${pending.attempt}|${failure}|${pending.paused}`;
      if (key !== state.last) console.log(line);
      state.last = key;
    },
    async close() {
      await client?.connection.close();
    },
  };
}

type Delivery = [label: string, send: () => Promise<Reply[]>];

/**
 * What the provider sends for one payment. The contract's provider: the event, its retry, an
 * event type we ignore, a forgery. Stripe and Standard Webhooks, as they behave for real: the
 * same event twice at once, other events of the payment arriving after it (out of order), a
 * redelivery later, signed afresh, a replay of an old signature, a forgery, a payment in
 * another currency than the shop's (kept as unmatched), then a partial refund and a dispute.
 */
function scenario(
  player: ProviderPlayer,
  orderId: number,
): { payment: ProviderEvent; deliveries: Delivery[] } {
  const payment = player.payment(orderId, 5400);
  const once = (event: ProviderEvent, options?: DeliveryOptions) => async () => [
    await player.deliver(event, options),
  ];
  if (player.name === 'payment') {
    return {
      payment,
      deliveries: [
        ['payment.succeeded', once(payment)],
        ['same event again (provider retry)', once(payment)],
        ['payment.failed (not handled)', once(player.other('payment.failed', orderId, 5400))],
        ['forged signature', once(payment, { forged: true })],
      ],
    };
  }
  const [paid, created, related, refunded, disputed] =
    player.name === 'stripe'
      ? [
          'payment_intent.succeeded',
          'payment_intent.created',
          'charge.succeeded',
          'charge.refunded',
          'charge.dispute.created',
        ]
      : [
          'payment.succeeded',
          'payment.created',
          'payment.captured',
          'payment.refunded',
          'payment.disputed',
        ];
  const tenMinutesAgo = Math.floor(Date.now() / 1000) - 600;
  const otherCurrency = config.SHOP_CURRENCY === 'usd' ? 'eur' : 'usd';
  return {
    payment,
    deliveries: [
      [
        `${paid}, twice at once`,
        () => Promise.all([player.deliver(payment), player.deliver(payment)]),
      ],
      [`${created} (late, out of order)`, once(player.other(created, orderId, 5400))],
      [`${related} (not handled)`, once(player.other(related, orderId, 5400))],
      [
        `${paid} redelivered 2 s later, signed afresh`,
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 2000));
          return [await player.deliver(payment)];
        },
      ],
      ['replay of a delivery signed 10 minutes ago', once(payment, { signedAt: tenMinutesAgo })],
      ['forged signature', once(payment, { forged: true })],
      [
        `${paid} in ${otherCurrency.toUpperCase()} (kept as unmatched)`,
        once(player.payment(orderId, 5400, otherCurrency)),
      ],
      [`${refunded} of 1000 (partial)`, once(player.refund(payment, orderId, 1000))],
      [`${disputed}`, once(player.dispute(payment, orderId, 5400))],
    ],
  };
}

async function post(
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const response = await fetch(new URL(path, baseUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

interface OrderView {
  status: string;
  shipment_status: string | null;
  payments: unknown[];
}

async function waitForShipment(orderId: number, onWait: () => Promise<void>): Promise<OrderView> {
  const deadline = Date.now() + waitSeconds * 1000;
  for (let round = 0; ; round++) {
    const response = await fetch(new URL(`/api/v1/orders/${orderId}`, baseUrl), {
      headers: apiAuth,
    });
    const view = (await response.json()) as OrderView;
    if (view.shipment_status !== null || Date.now() > deadline) return view;
    // About once a second: what the warehouse call is doing meanwhile.
    if (round % 4 === 3) await onWait();
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function warehouseCalls(orderId: number): Promise<number | undefined> {
  const url = config.WAREHOUSE_API_URL ?? `http://127.0.0.1:${config.WAREHOUSE_SIMULATOR_PORT}`;
  try {
    const response = await fetch(new URL('/_simulator/requests', url));
    if (!response.ok) return undefined;
    const body = (await response.json()) as { shipments: Array<{ order_id: number }> };
    return body.shipments.filter((s) => s.order_id === orderId).length;
  } catch {
    return undefined;
  }
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  console.error(`demo failed: ${message}\nIs the stack running? Start it with: npm start`);
  process.exit(1);
});
