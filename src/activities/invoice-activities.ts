import { createHash } from 'node:crypto';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import PDFDocument from 'pdfkit';
import type { Order, OrdersRepository, Payment, PaymentsRepository } from '../db';
import { writeFileAtomically } from './atomic-file';
import { atCrashPoint } from './crash-points';
import { findOrderOrFail } from './order-lookup';

export interface InvoiceActivityDeps {
  orders: OrdersRepository;
  payments: PaymentsRepository;
  invoiceDir: string;
  /** Extra ms per invoice: tests and the demo fill the heavy queue with slow jobs. */
  invoiceDelayMs?: number;
}

export interface GenerateInvoicePdfResult {
  orderId: number;
  file: string;
  bytes: number;
  /** sha256 of the PDF: the same order and payments always render the same bytes. */
  sha256: string;
}

/** Heartbeat this often while working: well inside the invoice workflow's heartbeat timeout. */
const HEARTBEAT_STEP_MS = 500;

/** The file an order's invoice is written to. One per order, so every attempt overwrites it. */
export function invoiceFile(invoiceDir: string, orderId: number): string {
  return path.resolve(invoiceDir, `order-${orderId}.pdf`);
}

export function createInvoiceActivities(deps: InvoiceActivityDeps) {
  const delayMs = deps.invoiceDelayMs ?? 0;
  return {
    /**
     * Idempotent: every attempt writes the same path atomically, and the same order renders the
     * same bytes (dates from the order, not the clock). Heartbeats, so a crashed worker is noticed
     * within the heartbeat timeout and a cancelled run stops at its next step.
     */
    async generateInvoicePdf(input: { orderId: number }): Promise<GenerateInvoicePdfResult> {
      const ctx = Context.current();
      const order = await findOrderOrFail(deps.orders, input.orderId);
      const payments = await deps.payments.listByOrder(order.id);

      const started = Date.now();
      for (let elapsed = 0; elapsed < delayMs; elapsed = Date.now() - started) {
        ctx.heartbeat({ step: 'rendering', elapsedMs: elapsed });
        // Rejects with CancelledFailure once the server reports the workflow cancelled.
        await ctx.sleep(Math.min(HEARTBEAT_STEP_MS, delayMs - elapsed));
      }
      const pdf = await renderInvoicePdf(order, payments);
      ctx.heartbeat({ step: 'writing', bytes: pdf.length });

      const file = invoiceFile(deps.invoiceDir, order.id);
      await atCrashPoint('generateInvoicePdf.write', () => writeFileAtomically(file, pdf));
      const sha256 = createHash('sha256').update(pdf).digest('hex');
      ctx.log.info('invoice written', { orderId: order.id, file, bytes: pdf.length, sha256 });
      return { orderId: order.id, file, bytes: pdf.length, sha256 };
    },
  };
}

export type InvoiceActivities = ReturnType<typeof createInvoiceActivities>;

/** Invoice number of an order: stable, so a regenerated invoice keeps its number. */
export function invoiceNumber(orderId: number): string {
  return `INV-${String(orderId).padStart(8, '0')}`;
}

/** Creation date (hashed into the PDF's ID) is the invoice date: same order, same bytes. */
export function renderInvoicePdf(order: Order, payments: readonly Payment[]): Promise<Buffer> {
  // The invoice is dated by the payment that paid the order; an unpaid one by the order.
  const invoiceDate = payments[0]?.createdAt ?? order.createdAt;
  const paid = payments.reduce((sum, p) => sum + p.amount, 0);
  const doc = new PDFDocument({
    size: 'A4',
    margin: 56,
    info: {
      Title: `Invoice ${invoiceNumber(order.id)}`,
      Subject: `Order #${order.id}`,
      Author: 'Order Payments',
      CreationDate: new Date(invoiceDate),
    },
  });
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });

  doc.font('Helvetica-Bold').fontSize(22).text('Invoice');
  doc.moveDown(0.5).font('Helvetica').fontSize(10);
  doc.text(`Invoice number: ${invoiceNumber(order.id)}`);
  doc.text(`Invoice date: ${day(invoiceDate)}`);
  doc.text(`Order: #${order.id}, placed ${day(order.createdAt)}`);
  doc.moveDown();
  doc.font('Helvetica-Bold').text('Bill to');
  doc.font('Helvetica').text(order.customerEmail).text(`Customer #${order.userId}`);
  doc.moveDown();

  const left = doc.page.margins.left;
  const width = doc.page.width - left - doc.page.margins.right;
  const row = (label: string, amount: string, bold = false) => {
    const y = doc.y;
    doc.font(bold ? 'Helvetica-Bold' : 'Helvetica');
    doc.text(label, left, y, { width: width - 120 });
    doc.text(amount, left + width - 120, y, { width: 120, align: 'right' });
    doc.moveDown(0.3);
  };
  row('Description', 'Amount', true);
  row(`Order #${order.id}`, amount(order.totalAmount));
  row('Total', amount(order.totalAmount), true);
  doc.moveDown();

  doc.font('Helvetica-Bold').text('Payments received', left);
  if (payments.length === 0) doc.font('Helvetica').text('None yet.');
  for (const p of payments) row(`${day(p.createdAt)}  ${p.providerEventId}`, amount(p.amount));
  row('Balance due', amount(Math.max(order.totalAmount - paid, 0)), true);
  if (paid > order.totalAmount)
    row('Paid in excess (refund under review)', amount(paid - order.totalAmount));
  doc.moveDown(2);
  doc
    .font('Helvetica')
    .fontSize(8)
    .text('Amounts are in the smallest unit of the order currency.', left);

  doc.end();
  return done;
}

function day(iso: string): string {
  return iso.slice(0, 10);
}

function amount(value: number): string {
  return value.toLocaleString('en-US');
}
