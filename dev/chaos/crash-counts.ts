import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { invoiceFile } from '../../src/activities/invoice-activities';
import { createOrdersRepository } from '../../src/db';
import { confirmationMessageId } from '../../src/mail/order-confirmation';
import { closeFailure } from '../../src/operator/failed-workflows';
import { causeChain } from '../../src/operator/failures';
import { orderWorkflowId } from '../../src/shared/order';
import type { PointRun } from './crash-matrix';
import { MAIL_FROM, type Hold, type Stack } from './crash-stack';

/**
 * What a crash-point row counts once every workflow has settled, read from the ground truth: the
 * database, the partners' own logs (warehouse simulator, SMTP sink, alert webhook) and the
 * server's failure chain; and the contract each scenario's setup meets to be counted and judged.
 */

export interface Counts {
  payments: number;
  shipments: number;
  /** Copies of the confirmation (same Message-ID) and mails with any other Message-ID. */
  mails: number;
  otherMails: number;
  ledger: number;
  alerts: number;
  /** Failed runs of the order's workflow that visibility lists. */
  failedRuns: number;
  /** Something seen that the counts do not judge (shown with the evidence). */
  note?: string;
  /** Scenario-specific: invoice file, refund flag, export rows, snapshots. */
  extra: string;
  /** When each copy of the confirmation, and each alert, arrived (ms). */
  mailTimes: number[];
  alertTimes: number[];
  /** Each alert's Idempotency-Key, in the order of alertTimes. */
  alertKeys: Array<string | undefined>;
}

/** A database outage, from its start to the database answering again (ms). */
export interface Outage {
  from: number;
  to: number;
}

export interface PreparedScenario {
  trigger: () => Promise<WorkflowHandle>;
  count: () => Promise<Counts>;
  judge: (
    counts: Counts,
    run: PointRun,
    outage: Outage | undefined,
    hold: Hold | undefined,
  ) => string[];
  /** Puts back what the scenario changed in the partners (the warehouse's mode). */
  cleanup?: () => void;
  /** Runs once the point was passed (and the fault is over), before the run must settle. */
  afterHit?: () => Promise<void>;
  /** The workflow to settle on when afterHit started a later one than the trigger's. */
  root?: () => Promise<WorkflowHandle>;
}

export async function countOrder(stack: Stack, orderId: number): Promise<Counts> {
  const db = stack.db.db;
  const count = async (table: 'payments' | 'loyalty_ledger') => {
    const row = await db
      .selectFrom(table)
      .where('order_id', '=', orderId)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  };
  const order = await createOrdersRepository(db).findById(orderId);
  const failed = await failedOrderRuns(stack.client, orderId);
  const gaveUp = failed[0] && (await gaveUpReason(stack.client, failed[0]));
  const messageId = confirmationMessageId(orderId, MAIL_FROM);
  const toOrder = stack.smtp.messages.filter((m) =>
    m.envelopeTo.includes(order?.customerEmail ?? ''),
  );
  const invoice = existsSync(invoiceFile(path.join(stack.dataDir, 'invoices'), orderId));
  const row = await db
    .selectFrom('orders')
    .where('id', '=', orderId)
    .select([
      'refund_review_requested_at',
      'shipment_status',
      'refunded_amount',
      'return_review_requested_at',
      'dispute_status',
    ])
    .executeTakeFirst();
  const shipments = [...stack.warehouse.shipments.values()].filter((s) => s.orderId === orderId);
  const shipment = shipments[0];
  return {
    payments: await count('payments'),
    shipments: shipments.length,
    mails: toOrder.filter((m) => m.messageId === messageId).length,
    mailTimes: toOrder
      .filter((m) => m.messageId === messageId)
      .map((m) => Date.parse(m.receivedAt)),
    alertTimes: stack.alerts.filter((a) => a.orderId === orderId).map((a) => a.at),
    alertKeys: stack.alerts.filter((a) => a.orderId === orderId).map((a) => a.idempotencyKey),
    otherMails: toOrder.filter((m) => m.messageId !== messageId).length,
    ledger: await count('loyalty_ledger'),
    alerts: stack.alerts.filter((a) => a.orderId === orderId).length,
    failedRuns: failed.length,
    extra: orderExtra({
      invoice,
      refundReview: Boolean(row?.refund_review_requested_at),
      shipmentStatus: row?.shipment_status ?? 'none',
      refunded: Number(row?.refunded_amount ?? 0),
      returnReview: Boolean(row?.return_review_requested_at),
      warehouseShipment: shipment?.status ?? 'none',
      disputeStatus: row?.dispute_status ?? undefined,
      gaveUp: gaveUp?.reason,
    }),
    ...(gaveUp && gaveUp.label !== gaveUp.reason
      ? { note: `the workflow labels the give-up ${gaveUp.label ?? 'nothing'}` }
      : {}),
  };
}

interface Execution {
  workflowId: string;
  runId: string;
}

/** The failed runs of an order's workflow that visibility lists (a reset keeps the old one). */
export async function failedOrderRuns(client: Client, orderId: number): Promise<Execution[]> {
  const runs: Execution[] = [];
  const query = `WorkflowId = "${orderWorkflowId(orderId)}" AND ExecutionStatus = "Failed"`;
  for await (const execution of client.workflow.list({ query })) {
    runs.push({ workflowId: execution.workflowId, runId: execution.runId });
  }
  return runs;
}

/**
 * Why the server stopped retrying the warehouse, from the failed run's failure chain: a deadline
 * (the retry would pass it, or it passed between attempts), the attempts used up, or a failure
 * that is not retried. Read from the server's failure, not from the workflow's own label.
 */
async function gaveUpReason(client: Client, run: Execution): Promise<GaveUp> {
  const failure = await closeFailure(client, run.workflowId, run.runId);
  const chain = causeChain(failure);
  const activity = chain.find((f) => f.activityFailureInfo);
  const retryState = activity?.activityFailureInfo?.retryState;
  const timeout = chain.find((f) => f.timeoutFailureInfo)?.timeoutFailureInfo?.timeoutType;
  const { RetryState, TimeoutType } = temporal.api.enums.v1;
  const reason =
    retryState === RetryState.RETRY_STATE_TIMEOUT ||
    timeout === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE
      ? 'deadline'
      : retryState === RetryState.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED
        ? 'max_attempts'
        : retryState === RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE
          ? 'non_retryable'
          : 'unknown';
  const payload = failure?.applicationFailureInfo?.details?.payloads?.[0];
  const details = payload?.data
    ? (JSON.parse(Buffer.from(payload.data).toString('utf8')) as { reason?: string })
    : {};
  return { reason, label: details.reason };
}

interface GaveUp {
  reason: string;
  /** What the workflow put in its failure's details (FulfilmentFailedDetails.reason). */
  label: string | undefined;
}

/** The order's row and its failed run, as `countOrder` words them. */
export function orderExtra(o: {
  invoice: boolean;
  refundReview: boolean;
  shipmentStatus: string;
  refunded?: number | undefined;
  returnReview?: boolean | undefined;
  warehouseShipment: string;
  disputeStatus?: string | undefined;
  gaveUp?: string | undefined;
}): string {
  return [
    o.invoice ? 'invoice' : 'no invoice',
    o.refundReview ? 'review' : 'no review',
    o.shipmentStatus,
    `refunded ${o.refunded ?? 0}`,
    o.returnReview ? 'return review' : 'no return review',
    `warehouse: ${o.warehouseShipment}`,
    ...(o.disputeStatus ? [`dispute ${o.disputeStatus}`] : []),
    ...(o.gaveUp ? [`gave up: ${o.gaveUp}`] : []),
  ].join(', ');
}

export function noOrderCounts(): Counts {
  return {
    payments: 0,
    shipments: 0,
    mails: 0,
    otherMails: 0,
    ledger: 0,
    alerts: 0,
    failedRuns: 0,
    extra: '',
    mailTimes: [],
    alertTimes: [],
    alertKeys: [],
  };
}
