import type { Client, WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { ReceivedMail } from '../../harness/partners/smtp-sink';
import type { Order } from '../../src/db';
import type { DatabaseHandle } from '../../src/db';
import {
  createLoyaltyRepository,
  createOrdersRepository,
  createPaymentsRepository,
} from '../../src/db';
import { paymentWorkflowId } from '../../src/shared/constants';
import type { PaymentWorkflowResult } from '../../src/shared/payment';
import type { ReceivedRequest, Shipment } from '../../harness/partners/warehouse-simulator';

/**
 * Everything the invariants are judged on, read once the run has settled: the database (through
 * the repositories), Temporal (visibility and histories), and the logs of the warehouse
 * simulator and the SMTP sink, which are the ground truth for what went out of the system.
 */

export interface PlannedOrder {
  id: number;
  userId: number;
  amount: number;
  /** The distinct payment events for this order (two for a double charge). */
  eventIds: string[];
}

export interface WorkflowSummary {
  workflowId: string;
  type: string;
  status: string;
}

export interface PaymentWorkflowEvidence {
  status: string | undefined;
  result: PaymentWorkflowResult | undefined;
  /** Attempt number of recordPayment that finally completed (1 = no retry). */
  recordPaymentAttempt: number | undefined;
  /** The failure that made the server retry recordPayment, as the history kept it. */
  recordPaymentLastFailure: string | undefined;
  /** The identity (`pid@host`) of the worker whose completion of recordPayment was recorded. */
  recordPaymentCompletedBy: string | undefined;
}

export interface Evidence {
  orders: PlannedOrder[];
  acceptedEventIds: ReadonlySet<string>;
  paymentsPerEvent: Map<string, number>;
  /** When each event's payment row was written (the worker's clock), in ms. */
  paymentCreatedAt: Map<string, number>;
  paymentsPerOrder: Map<number, number>;
  orderRows: Map<number, Order | undefined>;
  ledgerRowsPerOrder: Map<number, number>;
  balancePerUser: Map<number, number>;
  warehouseRequests: readonly ReceivedRequest[];
  shipments: readonly Shipment[];
  mails: readonly ReceivedMail[];
  workflows: WorkflowSummary[];
  paymentWorkflows: Map<string, PaymentWorkflowEvidence>;
  /** Files in the invoice directory (temporary files excluded); undefined: no invoice worker ran. */
  invoiceFiles: readonly string[] | undefined;
}

export async function gatherEvidence(input: {
  db: DatabaseHandle;
  client: Client;
  orders: PlannedOrder[];
  acceptedEventIds: ReadonlySet<string>;
  warehouseRequests: readonly ReceivedRequest[];
  shipments: readonly Shipment[];
  mails: readonly ReceivedMail[];
  invoiceFiles: readonly string[] | undefined;
}): Promise<Evidence> {
  const payments = createPaymentsRepository(input.db.db);
  const ordersRepository = createOrdersRepository(input.db.db);
  const loyalty = createLoyaltyRepository(input.db.db);

  const paymentsPerEvent = new Map<string, number>();
  const paymentCreatedAt = new Map<string, number>();
  const paymentsPerOrder = new Map<number, number>();
  const orderRows = new Map<number, Order | undefined>();
  for (const order of input.orders) {
    orderRows.set(order.id, await ordersRepository.findById(order.id));
    const rows = await payments.listByOrder(order.id);
    paymentsPerOrder.set(order.id, rows.length);
    for (const row of rows) paymentCreatedAt.set(row.providerEventId, Date.parse(row.createdAt));
    for (const eventId of order.eventIds) {
      paymentsPerEvent.set(eventId, await payments.countByEventId(eventId));
    }
  }

  const ledgerRowsPerOrder = new Map<number, number>();
  const balancePerUser = new Map<number, number>();
  for (const userId of new Set(input.orders.map((o) => o.userId))) {
    for (const entry of await loyalty.ledgerFor(userId)) {
      ledgerRowsPerOrder.set(entry.orderId, (ledgerRowsPerOrder.get(entry.orderId) ?? 0) + 1);
    }
    balancePerUser.set(userId, await loyalty.balanceOf(userId));
  }

  const workflows: WorkflowSummary[] = [];
  for await (const info of input.client.workflow.list()) {
    workflows.push({ workflowId: info.workflowId, type: info.type, status: info.status.name });
  }

  const paymentWorkflows = new Map<string, PaymentWorkflowEvidence>();
  const statusById = new Map(workflows.map((w) => [w.workflowId, w.status]));
  for (const order of input.orders) {
    for (const eventId of order.eventIds) {
      const workflowId = paymentWorkflowId(eventId);
      paymentWorkflows.set(eventId, {
        status: statusById.get(workflowId),
        ...(statusById.has(workflowId)
          ? await readPaymentHistory(input.client, workflowId)
          : {
              result: undefined,
              recordPaymentAttempt: undefined,
              recordPaymentLastFailure: undefined,
              recordPaymentCompletedBy: undefined,
            }),
      });
    }
  }

  return {
    orders: input.orders,
    acceptedEventIds: input.acceptedEventIds,
    paymentsPerEvent,
    paymentCreatedAt,
    paymentsPerOrder,
    orderRows,
    ledgerRowsPerOrder,
    balancePerUser,
    warehouseRequests: input.warehouseRequests,
    shipments: input.shipments,
    mails: input.mails,
    workflows,
    paymentWorkflows,
    invoiceFiles: input.invoiceFiles,
  };
}

/** The workflow's result and how many attempts recordPayment took, read from its history. */
async function readPaymentHistory(
  client: Client,
  workflowId: string,
): Promise<Omit<PaymentWorkflowEvidence, 'status'>> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const scheduled = events.find(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'recordPayment',
  );
  // Retries of an activity are not events of their own: the started event written when the
  // activity finally closes carries the attempt number and the failure of the one before.
  const started = events.find(
    (e) =>
      scheduled?.eventId != null &&
      String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled.eventId),
  )?.activityTaskStartedEventAttributes;
  const completed = events.find(
    (e) => e.workflowExecutionCompletedEventAttributes,
  )?.workflowExecutionCompletedEventAttributes;
  const payload = completed?.result?.payloads?.[0];
  const result = payload
    ? defaultPayloadConverter.fromPayload<PaymentWorkflowResult>(payload)
    : undefined;
  if (!scheduled) return { result, ...localRecordPayment(events) };
  return {
    result,
    recordPaymentAttempt: started?.attempt ?? undefined,
    recordPaymentLastFailure: started?.lastFailure?.message ?? undefined,
    recordPaymentCompletedBy: started?.identity ?? undefined,
  };
}

type HistoryEvents = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>;

/**
 * recordPayment as a local activity (patch 'local-payment-steps'): it runs inside a workflow task
 * and leaves only a marker. A worker killed after the commit loses that workflow task, which times
 * out (or fails) before the marker; the next one runs the step again. So the step ran once more
 * than the workflow tasks lost before its marker: that is its attempt here. The marker belongs to
 * the workflow task completed just before it, whose identity names the worker that ran the step.
 */
function localRecordPayment(
  events: HistoryEvents,
): Pick<
  PaymentWorkflowEvidence,
  'recordPaymentAttempt' | 'recordPaymentLastFailure' | 'recordPaymentCompletedBy'
> {
  const marker = events.findIndex(
    (e) =>
      e.markerRecordedEventAttributes?.markerName === 'core_local_activity' &&
      localActivityType(e.markerRecordedEventAttributes) === 'recordPayment',
  );
  if (marker < 0) {
    return {
      recordPaymentAttempt: undefined,
      recordPaymentLastFailure: undefined,
      recordPaymentCompletedBy: undefined,
    };
  }
  const reportedBy = events
    .slice(0, marker)
    .reverse()
    .find((e) => e.workflowTaskCompletedEventAttributes)?.workflowTaskCompletedEventAttributes;
  const lost = events
    .slice(0, marker)
    .filter((e) => e.workflowTaskTimedOutEventAttributes || e.workflowTaskFailedEventAttributes);
  const last = lost.at(-1);
  return {
    recordPaymentAttempt: 1 + lost.length,
    recordPaymentLastFailure: last
      ? (last.workflowTaskFailedEventAttributes?.failure?.message ?? 'workflow task timed out')
      : undefined,
    recordPaymentCompletedBy: reportedBy?.identity ?? undefined,
  };
}

/** The activity type a local activity's marker records (its `data` detail, JSON). */
export function localActivityType(
  marker: NonNullable<HistoryEvents[number]['markerRecordedEventAttributes']>,
): string | undefined {
  const data = marker.details?.data?.payloads?.[0]?.data;
  if (!data) return undefined;
  try {
    return (JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type?: string })
      .activity_type;
  } catch {
    return undefined;
  }
}
