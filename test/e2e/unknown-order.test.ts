import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { PROVIDERS, providerPlayer } from '../../harness/providers/player';
import { createUnmatchedRepository } from '../../src/db';
import { attachedEventId, attachUnmatched } from '../../src/operator/unmatched';
import { paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { TEST_STANDARD_SECRET, TEST_STRIPE_SECRET } from '../support/providers';
import { startPaymentStack, type PaymentStack } from '../support/stack';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { testDatabases } from '../../harness/databases';
import { TEST_WEBHOOK_SECRET } from '../support/webhook';

// A payment for an order that does not exist, on every provider's endpoint, over real HTTP to
// the production worker: kept once in the unmatched inbox (not a failed workflow that only
// Temporal's retention remembers), redeliveries counted there, and an operator's attach, once
// the order exists, pays it as one normal payment with one shipment.

const SHOP_CURRENCY = 'jpy';
const AMOUNT = 5400;

describe.each(testDatabases)('a payment for an unknown order ($name)', ({ name }) => {
  let env: TestWorkflowEnvironment;
  let stack: PaymentStack;

  beforeAll(async () => {
    // A server per database: inbox entry IDs, and so `payment-unmatched~<id>`, start at 1 in
    // each, and one namespace would dedup the second database's attach against the first's.
    env = await createDevServerEnv();
    stack = await startPaymentStack(env, {
      database: name,
      listen: true,
      appConfig: {
        STRIPE_WEBHOOK_SECRETS: [TEST_STRIPE_SECRET],
        STANDARD_WEBHOOK_SECRETS: [TEST_STANDARD_SECRET],
        SHOP_CURRENCY,
      },
    });
  });
  afterAll(async () => {
    await stack?.close();
    await env?.teardown();
  });

  const newOrder = async (key: string) =>
    (
      await stack.orders.createWithIdempotencyKey({
        userId: 1,
        customerEmail: 'buyer@example.com',
        totalAmount: AMOUNT,
        idempotencyKey: `${key}-${Date.now()}`,
      })
    ).order;

  it.each(PROVIDERS)(
    'is kept once on the %s endpoint, counted on redelivery, and paid once when attached',
    async (provider) => {
      const player = providerPlayer(provider, stack.baseUrl, {
        PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
        STRIPE_WEBHOOK_SECRETS: [TEST_STRIPE_SECRET],
        STANDARD_WEBHOOK_SECRETS: [TEST_STANDARD_SECRET],
        SHOP_CURRENCY,
      });
      const inbox = createUnmatchedRepository(stack.db.db);
      // The next order ID: no order has it yet, and the shop creates it later.
      const laterOrderId = (await newOrder(`probe-${provider}`)).id + 1;
      const payment = player.payment(laterOrderId, AMOUNT);
      const workflowId = player.workflowId(payment);
      const eventId = workflowId.slice(paymentWorkflowId('').length);

      const first = await player.deliver(payment);
      expect([first.status, first.text]).toEqual([200, '{"status":"accepted"}']);
      const handle = env.client.workflow.getHandle(workflowId);
      const result = await handle.result();
      expect(result).toEqual({
        kind: 'unmatched',
        reason: 'unknown_order',
        unmatchedId: expect.any(Number),
        created: true,
        orderId: laterOrderId,
      });
      expect((await handle.describe()).status.name).toBe('COMPLETED');
      const kept = await inbox.findByEventId(eventId);
      expect(kept).toMatchObject({
        reason: 'unknown_order',
        provider,
        payload: { orderId: laterOrderId, amount: AMOUNT },
        deliveryCount: 1,
        resolution: null,
      });
      expect(kept?.id).toBe(result.kind === 'unmatched' ? result.unmatchedId : -1);
      expect(await stack.payments.countByEventId(eventId)).toBe(0);

      // The provider's retry: deduped by the workflow ID, counted in the inbox, and told so.
      const again = await player.deliver(payment);
      expect([again.status, again.text]).toEqual([200, '{"status":"unmatched"}']);
      // Still so once the order exists: the entry is the operator's to attach, not paid here.
      const order = await newOrder(`later-${provider}`);
      expect(order.id).toBe(laterOrderId);
      const late = await player.deliver(payment);
      expect([late.status, late.text]).toEqual([200, '{"status":"unmatched"}']);
      expect(await inbox.findByEventId(eventId)).toMatchObject({ deliveryCount: 3 });
      expect(await stack.payments.countByEventId(eventId)).toBe(0);

      // The operator attaches it, twice (as after a lost terminal): one payment, one shipment.
      const deps = { inbox, payments: stack.starter, shopCurrency: SHOP_CURRENCY };
      const attached = await attachUnmatched(deps, kept!.id, order.id);
      const reattached = await attachUnmatched(deps, kept!.id, order.id);
      expect(attached).toMatchObject({ kind: 'attached', first: true });
      expect(reattached).toMatchObject({ kind: 'attached', first: false });
      const paid = await env.client.workflow
        .getHandle(paymentWorkflowId(attachedEventId(kept!)))
        .result();
      expect(paid).toMatchObject({ created: true, orderWorkflowId: orderWorkflowId(order.id) });
      await env.client.workflow.getHandle(orderWorkflowId(order.id)).result();
      expect(await stack.orders.findById(order.id)).toMatchObject({
        status: 'paid',
        shipmentStatus: 'requested',
      });
      expect(await stack.payments.listByOrder(order.id)).toEqual([
        expect.objectContaining({ providerEventId: attachedEventId(kept!), amount: AMOUNT }),
      ]);
      expect(stack.warehouse.requests.filter((r) => r.orderId === order.id)).toHaveLength(1);
      // The provider's event once more, after the attach: counted, nothing paid twice.
      const afterAttach = await player.deliver(payment);
      expect([afterAttach.status, afterAttach.text]).toEqual([200, '{"status":"unmatched"}']);
      expect(await stack.payments.listByOrder(order.id)).toHaveLength(1);
      expect(await inbox.findByEventId(eventId)).toMatchObject({ deliveryCount: 4 });
    },
    60_000,
  );
});
