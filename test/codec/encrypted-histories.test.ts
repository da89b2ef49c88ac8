import { randomBytes } from 'node:crypto';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createOrdersRepository, type DatabaseHandle } from '../../src/db';
import { dataConverterFor } from '../../src/codec/data-converter';
import { createPaymentStarter } from '../../src/temporal/payment-starter';
import { orderWorkflowId } from '../../src/shared/order';
import { createPaymentWorker } from '../../src/workers/payments';
import { testActivityDeps } from '../../harness/activity-deps';
import { testDatabases } from '../../harness/databases';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { startPartners, type Partners } from '../support/stack';
import { createTestOrder } from '../support/orders';

// With PAYLOAD_ENCRYPTION_KEY set, what reaches the Temporal server is ciphertext: the
// histories of a real payment hold no input, result or signal in clear.
let env: TestWorkflowEnvironment;
let db: DatabaseHandle;
let partners: Partners;

beforeAll(async () => {
  env = await createDevServerEnv();
  db = await testDatabases[0]!.create();
  partners = await startPartners();
});
afterAll(async () => {
  await partners?.close();
  await db?.close();
  await env?.teardown();
});

it('keeps every payload of a payment and its order encrypted in the server, and the flow still works', async () => {
  const dataConverter = dataConverterFor(`k1:${randomBytes(32).toString('base64')}`);
  const client = new Client({
    connection: env.connection,
    namespace: env.namespace ?? 'default',
    dataConverter,
  });
  const worker = await createPaymentWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    activities: testActivityDeps(db, partners),
    dataConverter,
  });
  const order = await createTestOrder(createOrdersRepository(db.db), {
    customerEmail: 'secret.buyer@example.com',
  });
  const eventId = `evt_secret_${randomBytes(4).toString('hex')}`;

  await worker.runUntil(async () => {
    const started = await createPaymentStarter(client, { startTimeoutMs: 10_000 }).start({
      eventId,
      orderId: order.id,
      amount: 5400,
    });
    await client.workflow.getHandle(started.workflowId).result();
    await client.workflow.getHandle(orderWorkflowId(order.id)).result();
  });

  // A redelivery's check against the first body reads the memo back through the same key.
  const again = await createPaymentStarter(client, { startTimeoutMs: 10_000 }).start({
    eventId,
    orderId: order.id,
    amount: 1,
  });
  expect(again).toMatchObject({
    duplicate: true,
    existing: { known: true, orderId: order.id, amount: 5400 },
  });

  expect(partners.warehouse.shipments.size).toBe(1);
  for (const workflowId of [`payment-${eventId}`, orderWorkflowId(order.id)]) {
    // Read with a client that has no key: exactly what the server (and anyone reading it) sees.
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const encodings = payloadEncodings(history);
    expect(encodings.length).toBeGreaterThan(3);
    expect(new Set(encodings)).toEqual(new Set(['binary/encrypted']));
    expect(JSON.stringify(history)).not.toContain(Buffer.from('"amount":5400').toString('base64'));
  }
});

/**
 * The encoding of every payload in a history: inputs, results, signals, memos, summaries. Search
 * attributes are skipped: the server must read them to index them, so they stay in clear (they
 * hold IDs only, never customer data); so are patch markers.
 */
function payloadEncodings(node: unknown, into: string[] = []): string[] {
  if (Array.isArray(node)) {
    for (const item of node) payloadEncodings(item, into);
  } else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      // Patch markers (patched()) carry the patch ID, written by the SDK's core, not user data.
      if (key === 'searchAttributes' || key === 'markerRecordedEventAttributes') continue;
      if (key === 'metadata' && value && typeof value === 'object' && 'encoding' in value) {
        into.push(Buffer.from((value as { encoding: Uint8Array }).encoding).toString());
      } else {
        payloadEncodings(value, into);
      }
    }
  }
  return into;
}
