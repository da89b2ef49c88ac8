import { createLoyaltyRepository } from '../../src/db';
import { paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { testDatabases } from '../../harness/databases';
import { devServerForTests, paymentStackForTests } from '../support/dev-server-for-tests';
import { uniqueEventId } from '../support/webhook';

// The whole flow over real sockets: HTTP webhook -> Temporal dev server -> worker -> database
// row and one call to the warehouse simulator.
const server = devServerForTests();

describe.each(testDatabases)('payment flow end to end over HTTP ($name)', ({ name }) => {
  const live = paymentStackForTests({ database: name, listen: true }, server);

  it('turns a signed webhook, delivered twice, into one payment row and one warehouse call', async () => {
    const { env, stack } = live;
    const order = await stack.http('/api/v1/orders', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': uniqueEventId('order') },
      body: JSON.stringify({ user_id: 1, customer_email: 'buyer@example.com', total_amount: 5400 }),
    });
    expect(order.status).toBe(201);
    const orderId = order.body.id as number;

    const eventId = uniqueEventId();
    const deliver = () =>
      stack.deliver({ id: eventId, event: 'payment.succeeded', order_id: orderId, amount: 5400 });
    expect(await deliver()).toEqual({ status: 200, body: { status: 'accepted' } });
    expect(await deliver()).toEqual({ status: 200, body: { status: 'accepted' } });

    const result = await env.client.workflow.getHandle(paymentWorkflowId(eventId)).result();
    expect(result).toMatchObject({ created: true, orderWorkflowId: orderWorkflowId(orderId) });
    await env.client.workflow.getHandle(orderWorkflowId(orderId)).result();

    const view = await stack.http(`/api/v1/orders/${orderId}`);
    expect(view.body).toMatchObject({ id: orderId, status: 'paid', shipment_status: 'requested' });
    expect(view.body.payments).toEqual([
      expect.objectContaining({ provider_event_id: eventId, amount: 5400 }),
    ]);
    expect(stack.warehouse.requests.filter((r) => r.orderId === orderId)).toHaveLength(1);
    expect(stack.warehouse.shipments.size).toBe(1);
    // The rest of the fulfilment, once: the confirmation mail and the loyalty points.
    expect(stack.smtp.messages.map((m) => m.messageId)).toEqual([
      `<order-${orderId}-confirmation@test.local>`,
    ]);
    expect(await createLoyaltyRepository(stack.db.db).balanceOf(1)).toBe(100);
  });
});
