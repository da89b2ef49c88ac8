import type { FastifyInstance } from 'fastify';
import { capturingLogger } from '../support/capturing-logger';
import {
  deliverStandard,
  deliverStripe,
  standardHeaders,
  standardPaymentEvent,
  stripePaymentIntentEvent,
  stripeSignature,
  TEST_STANDARD_SECRET,
  TEST_STRIPE_SECRET,
} from '../support/providers';
import {
  deliverWebhook,
  paymentEvent,
  recordingWebhookApp,
  WEBHOOK_NOW_S as NOW_S,
} from '../support/webhook';

// The Stripe and Standard Webhooks endpoints log as the contract's does: event, order and
// workflow IDs, never a secret, a signature or the body, whatever the outcome.

const CANARY = 'CANARY-provider-body-5c1e';
const FORGER = 'whsec_forger_secret_never_logged';

let app: FastifyInstance;
let lines: string[];
const signatures: string[] = [];

// Sent inside the test, not in a beforeAll: mutation testing credits a test only with what runs
// in it (docs/testing.md).
async function sendEverything() {
  const captured = capturingLogger();
  lines = captured.lines;
  ({ app } = await recordingWebhookApp(
    {
      STRIPE_WEBHOOK_SECRETS: [TEST_STRIPE_SECRET],
      STANDARD_WEBHOOK_SECRETS: [TEST_STANDARD_SECRET],
    },
    { logger: captured.logger },
  ));

  const stripe = async (event: object, secret = TEST_STRIPE_SECRET) => {
    const payload = JSON.stringify({ ...event, canary: CANARY });
    const header = stripeSignature(payload, { timestamp: NOW_S, secret });
    signatures.push(header.split('v1=')[1]!);
    return deliverStripe(app, payload, header);
  };
  const standard = async (event: object, id: string) => {
    const payload = JSON.stringify({ ...event, canary: CANARY });
    const headers = standardHeaders(payload, { id, timestamp: NOW_S });
    signatures.push(headers['webhook-signature'].slice(3));
    return deliverStandard(app, payload, headers);
  };
  const statuses = [
    (await stripe(stripePaymentIntentEvent({ id: 'evt_log_1', orderId: '5' }))).statusCode,
    (await stripe(stripePaymentIntentEvent({ id: 'evt_log_1', orderId: '6' }))).statusCode,
    (await stripe(stripePaymentIntentEvent({ type: 'charge.succeeded' }))).statusCode,
    (await stripe(stripePaymentIntentEvent({ orderId: null }))).statusCode,
    (await stripe(stripePaymentIntentEvent({ currency: 'usd' }))).statusCode,
    (await stripe(stripePaymentIntentEvent(), FORGER)).statusCode,
    (await standard(standardPaymentEvent(), 'msg_log_1')).statusCode,
    (await standard(standardPaymentEvent({ amount: -1 }), 'msg_log_2')).statusCode,
  ];
  const contract = await deliverWebhook(app, { ...paymentEvent({ event: 'payment.failed' }) });
  statuses.push(contract.statusCode);
  expect(statuses).toEqual([200, 409, 200, 200, 200, 401, 200, 400, 200]);
}
afterAll(() => app.close());

it('never logs a secret, a signature or any part of a body', async () => {
  await sendEverything();
  const secrets = [
    TEST_STRIPE_SECRET,
    FORGER,
    TEST_STANDARD_SECRET,
    TEST_STANDARD_SECRET.slice('whsec_'.length),
  ];
  for (const line of lines) {
    for (const secret of [...secrets, ...signatures, CANARY]) expect(line).not.toContain(secret);
  }
});

it('names the provider-qualified event, the order and the workflow of what it accepts', async () => {
  lines.splice(0);
  await app.close();
  await sendEverything();
  const accepted = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(accepted).toEqual(
    expect.arrayContaining([
      expect.objectContaining({
        eventId: 'stripe~evt_log_1',
        orderId: 5,
        workflowId: 'payment-stripe~evt_log_1',
        matchedSecret: 'current',
      }),
      expect.objectContaining({ eventId: 'standard~msg_log_1', orderId: 1 }),
      expect.objectContaining({
        provider: 'stripe',
        event: 'payment_intent.succeeded',
        note: 'no metadata.order_id',
      }),
      expect.objectContaining({
        provider: 'stripe',
        eventId: expect.stringMatching(/^stripe~evt_/) as unknown,
        reason: 'currency',
        note: "the payment is in USD, but this shop's orders are in JPY (SHOP_CURRENCY)",
      }),
      expect.objectContaining({ provider: 'payment', event: 'payment.failed' }),
    ]),
  );
});
