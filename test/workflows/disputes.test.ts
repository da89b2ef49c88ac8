import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createAlertActivities } from '../../src/activities/alert-activities';
import { disputeAlertWorkflowId } from '../../src/shared/alert';
import { disputeWorkflowId, type DisputeEvent } from '../../src/shared/payment-events';
import { startAlertSink, type AlertSink } from '../operations/helpers';
import { bundledWorker, workflowBundle } from '../support/bundles';
import { createTimeSkippingEnv } from '../support/temporal';
import type { disputeWorkflow } from '../../src/workflows';

// Issue 25, point 1: a dispute opened raises one alert per dispute, with its evidence deadline
// and the Web UI link, however many events report it; a closure raises none.
let env: TestWorkflowEnvironment;
let sink: AlertSink;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  sink = await startAlertSink();
});

afterAll(async () => {
  await sink?.close();
  await env?.teardown();
});

it('alerts once per opened dispute, with the evidence deadline and the Web UI link', async () => {
  const taskQueue = `disputes-${randomUUID()}`;
  const worker = await bundledWorker(
    env,
    await workflowBundle(),
    taskQueue,
    createAlertActivities({ alertWebhookUrl: sink.url, temporalUiUrl: 'http://localhost:8233' }),
  );
  const disputeId = `dp_${randomUUID()}`;
  const event = (status: DisputeEvent['status']): DisputeEvent => ({
    eventId: `stripe~evt_${randomUUID()}`,
    paymentRef: 'stripe~pi_1',
    disputeId,
    amount: 5400,
    status,
    evidenceDueBy: '2026-12-20T23:59:59.000Z',
    orderId: 12,
  });
  const results = await worker.runUntil(async () => {
    const all: Array<{ alerted: boolean }> = [];
    for (const status of ['opened', 'opened', 'won'] as const) {
      const e = event(status);
      all.push(
        await env.client.workflow.execute<typeof disputeWorkflow>('disputeWorkflow', {
          taskQueue,
          workflowId: disputeWorkflowId(e.eventId),
          args: [e],
          workflowExecutionTimeout: '1 hour',
        }),
      );
    }
    await env.client.workflow.getHandle(disputeAlertWorkflowId(disputeId)).result();
    return all;
  });

  expect(results).toEqual([{ alerted: true }, { alerted: false }, { alerted: false }]);
  const alerts = sink.received.filter((r) => String(r.body.text).includes(disputeId));
  expect(alerts).toHaveLength(1);
  expect(alerts[0]!.body.text).toContain('evidence due by 2026-12-20T23:59:59.000Z');
  expect(alerts[0]!.body.alert).toMatchObject({
    kind: 'dispute',
    order_id: 12,
    web_ui_url: expect.stringContaining('/workflows/dispute-'),
  });
});
