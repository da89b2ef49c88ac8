import type { Page } from 'playwright-core';
import { createOrdersRepository } from '../../src/db';
import { orderWorkflowId } from '../../src/shared/order';
import { createPaymentStarter, type PaymentStarter } from '../../src/temporal/payment-starter';
import { uniqueEventId } from '../support/webhook';
import { eventually } from '../support/eventually';
import { UI_WAIT_MS } from '../support/browser';
import { createTestOrder } from '../support/orders';
import { startWebUiHarness, type WebUiHarness } from '../support/web-ui';

// What an operator does in the Temporal Web UI, in a real browser: filter the workflow list by
// the custom search attribute `OrderId = <id>` and find the order's payment, Completed; read a
// payment's history by its summaries; and, while the warehouse is down, see the order's retrying
// `notifyWarehouse` in its Pending Activities tab (docs/web-ui.md has that screenshot). Runs the
// dev server with its Web UI (as `npm start` does), the real payment worker and local peers.

let ui: WebUiHarness;
let starter: PaymentStarter;

beforeAll(async () => {
  ui = await startWebUiHarness({ name: 'web-ui' });
  starter = createPaymentStarter(ui.client, { startTimeoutMs: 10_000 });
}, 180_000);

afterAll(async () => {
  await ui?.close();
});

async function newOrder(): Promise<number> {
  const order = await createTestOrder(createOrdersRepository(ui.db.db));
  return order.id;
}

/** Pays an order as the webhook would, and waits until the payment and the order are done. */
async function payAndSettle(orderId: number): Promise<string> {
  const { workflowId } = await starter.start({
    eventId: uniqueEventId(),
    orderId,
    amount: 5400,
  });
  await ui.client.workflow.getHandle(workflowId).result();
  await ui.client.workflow.getHandle(orderWorkflowId(orderId)).result();
  return workflowId;
}

/** Opens the workflow list filtered by a visibility query, reloading until `ready` holds. */
async function openWorkflowList(query: string, ready: (page: Page) => Promise<boolean>) {
  const page = await ui.browser.context.newPage();

  const deadline = Date.now() + UI_WAIT_MS;
  for (;;) {
    await ui.open(page, `workflows?query=${encodeURIComponent(query)}`);
    try {
      await page
        .getByRole('link', { name: /^payment-/ })
        .first()
        .waitFor({ timeout: 5_000 });
      if (await ready(page)) return page;
    } catch {
      // Not listed yet: visibility lags a moment behind the close of a workflow.
    }
    if (Date.now() > deadline) {
      const shot = await ui.browser.screenshot(page, 'workflow-list-timeout');
      throw new Error(`the Web UI did not list the expected workflows for ${query}; see ${shot}`);
    }
  }
}

describe('Temporal Web UI (Chromium)', () => {
  it("lists an order's payment, Completed, filtered by OrderId, and no other order's", async () => {
    const orderId = await newOrder();
    const otherOrderId = await newOrder();
    const paymentId = await payAndSettle(orderId);
    const otherPaymentId = await payAndSettle(otherOrderId);

    const page = await openWorkflowList(`OrderId = ${orderId}`, async (p) =>
      p.getByRole('link', { name: paymentId, exact: true }).isVisible(),
    );
    const row = page.getByRole('row').filter({ hasText: paymentId });
    await row.getByText('Completed', { exact: true }).waitFor({ timeout: UI_WAIT_MS });
    expect(await row.innerText()).toContain('paymentWorkflow');
    // The order's own workflow carries OrderId too (upserted by the workflow), the other
    // order's payment does not match the filter.
    await page
      .getByRole('row')
      .filter({ hasText: orderWorkflowId(orderId) })
      .getByText('Completed', { exact: true })
      .waitFor({ timeout: UI_WAIT_MS });
    expect(await page.getByText(otherPaymentId).count()).toBe(0);

    await ui.browser.screenshot(page, `workflows-order-${orderId}`);
    await page.close();
  }, 120_000);

  it("shows the payment's activities by their summaries in its history", async () => {
    const orderId = await newOrder();
    const paymentId = await payAndSettle(orderId);
    const { runId } = await ui.client.workflow.getHandle(paymentId).describe();
    const page = await ui.browser.context.newPage();
    const workflowPath = `workflows/${encodeURIComponent(paymentId)}/${runId}/history`;
    await ui.open(page, workflowPath);
    try {
      await page
        .getByText('Record the payment (once per provider event)')
        .first()
        .waitFor({ timeout: UI_WAIT_MS });
      await page
        .getByText("Hand the payment to the order's workflow")
        .first()
        .waitFor({ timeout: UI_WAIT_MS });
    } finally {
      await ui.browser.screenshot(page, `history-${paymentId}`);
    }
    await page.close();
  }, 120_000);

  it("shows the retrying warehouse call in the order's Pending Activities: attempt, last failure, next retry", async () => {
    ui.partners.warehouse.setMode({ kind: 'unavailable', status: 503 });
    const orderId = await newOrder();
    const order = ui.client.workflow.getHandle(orderWorkflowId(orderId));
    try {
      const { workflowId } = await starter.start({
        eventId: uniqueEventId(),
        orderId,
        amount: 5400,
      });
      await ui.client.workflow.getHandle(workflowId).result();
      // Attempts 1 and 2 have failed (10 s apart); the server now waits 30 s before attempt 3,
      // long enough for the page to show one steady state.
      await eventually(async () => {
        const { raw } = await order.describe();
        expect(raw.pendingActivities).toEqual([
          expect.objectContaining({ activityType: { name: 'notifyWarehouse' }, attempt: 3 }),
        ]);
      });
      const { runId } = await order.describe();

      const page = await ui.browser.context.newPage();
      const workflowPath = `workflows/${encodeURIComponent(order.workflowId)}/${runId}`;
      await ui.open(page, `${workflowPath}/pending-activities`);
      try {
        await page
          .getByText('notifyWarehouse', { exact: true })
          .first()
          .waitFor({ timeout: UI_WAIT_MS });
        await page.getByText('3 of 5', { exact: true }).waitFor({ timeout: UI_WAIT_MS });
        await page.getByText('warehouse answered 503').first().waitFor({ timeout: UI_WAIT_MS });
        const text = await page.locator('body').innerText();
        expect(text).toMatch(/Pending Activities\s+1/);
        // Activity 2: the order run's local check of its event (activity 1) comes first.
        expect(text).toMatch(/Activity ID\s+3\b/);
        expect(text).toMatch(/Next Retry\s+\d{4}-\d\d-\d\d UTC [\d:.]+\s*\(\d+s\)/);
        expect(text).toMatch(/Last Failure[\s\S]*"WarehouseUnavailable"/);
      } finally {
        await ui.browser.screenshot(page, `pending-activities-order-${orderId}`, {
          fullPage: false,
        });
      }
      // The workflow's current details, which the failed attempt told it (its metadata query),
      // on the User Metadata tab. By now a slow machine may be past attempt 3: any failed one.
      await ui.open(page, `${workflowPath}/history`);
      try {
        await page
          .getByText('User Metadata', { exact: true })
          .first()
          .click({ timeout: UI_WAIT_MS });
        // The UI renders the details (markdown) in a sandboxed frame of their own.
        await eventually(async () => {
          const texts = await Promise.all(
            page.frames().map((f) =>
              f
                .locator('body')
                .innerText({ timeout: 1_000 })
                .catch(() => ''),
            ),
          );
          expect(texts.join('\n')).toMatch(
            /warehouse attempt [2-4] of 5, next in (30|120) s, last: 503/,
          );
        });
      } finally {
        await ui.browser.screenshot(page, `current-details-order-${orderId}`, { fullPage: false });
        await page.close();
      }
    } finally {
      await order.terminate('Web UI test done').catch(() => {});
      ui.partners.warehouse.setMode({ kind: 'ok' });
    }
  }, 120_000);
});
