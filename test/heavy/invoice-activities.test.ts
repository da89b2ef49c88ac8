import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import {
  createInvoiceActivities,
  invoiceNumber,
  type GenerateInvoicePdfResult,
} from '../../src/activities/invoice-activities';
import { createOrdersRepository, createPaymentsRepository } from '../../src/db';
import { FailureType } from '../../src/shared/errors';
import type { MockActivityEnvironment } from '@temporalio/testing';
import { quietActivityEnvironment } from '../support/activity-environment';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { tempDirsForTests } from '../support/temp-dirs';

// generateInvoicePdf against a real database and a real directory, outside any workflow.

describe.each(testDatabases)('generateInvoicePdf ($name)', ({ create }) => {
  const tempDir = tempDirsForTests('invoices-');
  let db: TestDatabaseHandle;
  let invoiceDir: string;

  beforeAll(async () => {
    [db, invoiceDir] = await Promise.all([create(), tempDir()]);
  });
  afterAll(async () => {
    await db?.close();
  });

  async function paidOrder(): Promise<number> {
    const { order } = await createOrdersRepository(db.db).createWithIdempotencyKey({
      userId: 7,
      customerEmail: 'buyer@example.com',
      totalAmount: 5_400,
    });
    await createPaymentsRepository(db.db).recordPayment({
      providerEventId: `evt-invoice-${order.id}-${db.dialect}`,
      orderId: order.id,
      amount: 5_400,
    });
    return order.id;
  }

  function generate(
    orderId: number,
    options: { invoiceDelayMs?: number; env?: MockActivityEnvironment } = {},
  ): Promise<GenerateInvoicePdfResult> {
    const activities = createInvoiceActivities({
      orders: createOrdersRepository(db.db),
      payments: createPaymentsRepository(db.db),
      invoiceDir,
      invoiceDelayMs: options.invoiceDelayMs,
    });
    const env = options.env ?? quietActivityEnvironment();
    return env.run((input: { orderId: number }) => activities.generateInvoicePdf(input), {
      orderId,
    });
  }

  it('writes a real PDF for the order to <INVOICE_DIR>/order-<id>.pdf', async () => {
    const orderId = await paidOrder();

    const result = await generate(orderId);

    expect(result.file).toBe(path.join(invoiceDir, `order-${orderId}.pdf`));
    const pdf = readFileSync(result.file);
    expect(pdf.length).toBe(result.bytes);
    expect(pdf.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect(pdf.subarray(-6).toString('latin1')).toMatch(/%%EOF\s*$/);
    // The document info names the invoice; page content is compressed.
    expect(pdf.toString('latin1')).toContain(`Invoice ${invoiceNumber(orderId)}`);
  });

  it('is idempotent: a second run writes the same bytes to the same path and leaves no temporary file', async () => {
    const orderId = await paidOrder();

    const first = await generate(orderId);
    const second = await generate(orderId);

    expect(second).toEqual(first);
    expect(readdirSync(invoiceDir).filter((name) => name.includes(`order-${orderId}`))).toEqual([
      `order-${orderId}.pdf`,
    ]);
    expect(readdirSync(invoiceDir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('heartbeats while it works on a slow invoice', async () => {
    const orderId = await paidOrder();
    const env = quietActivityEnvironment();
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (details: unknown) => heartbeats.push(details));

    await generate(orderId, { invoiceDelayMs: 1_200, env });

    // Every 500 ms while rendering, then once before writing.
    expect(heartbeats.length).toBeGreaterThanOrEqual(3);
    expect(heartbeats.at(-1)).toMatchObject({ step: 'writing' });
  });

  it('stops at its next heartbeat step when cancelled', async () => {
    const orderId = await paidOrder();
    const env = quietActivityEnvironment();
    const run = generate(orderId, { invoiceDelayMs: 30_000, env });
    setTimeout(() => env.cancel(), 200);

    await expect(run).rejects.toMatchObject({ name: 'CancelledFailure' });
  });

  it('fails without retry for an order that does not exist', async () => {
    const failure = await generate(999_999).catch((err: unknown) => err);

    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: FailureType.OrderNotFound, nonRetryable: true });
  });
});
