import type http from 'node:http';
import type { Client } from '@temporalio/client';
import { createOrdersRepository, type DatabaseHandle } from '../../src/db';
import { paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import type {
  benchMirrorOrderWorkflow,
  benchMirrorPaymentWorkflow,
  benchNoopWorkflow,
} from '../workflows';
import { deliver } from './http-client';
import { BENCH_TASK_QUEUE } from './names';

/**
 * One unit of end-to-end work per kind, timed from the client's side. Times are epoch
 * milliseconds (Date.now), comparable with the timestamps the worker writes to the database.
 */
export interface Flow {
  kind: FlowKind;
  /** The webhook request was sent / the workflow start was called. */
  sentAt: number;
  /** The webhook answered 200 / the start call returned. */
  acceptedAt: number;
  /** The first workflow (payment, or its stand-in) completed. */
  firstDoneAt: number;
  /** Everything completed (the order workflow, or its stand-in). */
  doneAt: number;
  eventId?: string;
  orderId?: number;
}

export type FlowKind = 'ours' | 'baseline' | 'mirror';

export interface FlowContext {
  client: Client;
  webhookOrigin: string;
  agent: http.Agent;
  /** Unique per run, so workflow IDs never collide. */
  idPrefix: string;
  orders: OrderPool;
}

/** Our flow: a signed webhook, the payment workflow, then the order workflow it hands over to. */
export async function oursFlow(ctx: FlowContext, index: number): Promise<Flow> {
  const orderId = await ctx.orders.take();
  const eventId = `${ctx.idPrefix}_ours_${index}`;
  const sentAt = Date.now();
  await deliver(ctx.webhookOrigin, { id: eventId, orderId, amount: ORDER_AMOUNT }, ctx.agent);
  const acceptedAt = Date.now();
  await ctx.client.workflow.getHandle(paymentWorkflowId(eventId)).result();
  const firstDoneAt = Date.now();
  await ctx.client.workflow.getHandle(orderWorkflowId(orderId)).result();
  return { kind: 'ours', sentAt, acceptedAt, firstDoneAt, doneAt: Date.now(), eventId, orderId };
}

/** The baseline: one workflow with one no-op activity, started straight through the client. */
export async function baselineFlow(ctx: FlowContext, index: number): Promise<Flow> {
  const sentAt = Date.now();
  const handle = await ctx.client.workflow.start<typeof benchNoopWorkflow>('benchNoopWorkflow', {
    workflowId: `${ctx.idPrefix}_noop_${index}`,
    taskQueue: BENCH_TASK_QUEUE,
  });
  const acceptedAt = Date.now();
  await handle.result();
  const doneAt = Date.now();
  return { kind: 'baseline', sentAt, acceptedAt, firstDoneAt: doneAt, doneAt };
}

/** Our flow's shape (two workflows, six activities) with no-op activity bodies. */
export async function mirrorFlow(ctx: FlowContext, index: number): Promise<Flow> {
  const orderKey = `${ctx.idPrefix}_mirror_order_${index}`;
  const sentAt = Date.now();
  const handle = await ctx.client.workflow.start<typeof benchMirrorPaymentWorkflow>(
    'benchMirrorPaymentWorkflow',
    {
      workflowId: `${ctx.idPrefix}_mirror_${index}`,
      taskQueue: BENCH_TASK_QUEUE,
      args: [{ orderKey }],
    },
  );
  const acceptedAt = Date.now();
  await handle.result();
  const firstDoneAt = Date.now();
  await ctx.client.workflow.getHandle<typeof benchMirrorOrderWorkflow>(orderKey).result();
  return { kind: 'mirror', sentAt, acceptedAt, firstDoneAt, doneAt: Date.now() };
}

export const FLOWS: Record<FlowKind, (ctx: FlowContext, index: number) => Promise<Flow>> = {
  ours: oursFlow,
  baseline: baselineFlow,
  mirror: mirrorFlow,
};

export const ORDER_AMOUNT = 5400;

/**
 * Pending orders for our flow to pay, created ahead of the measured rounds (each with its own
 * customer, as real orders have) so creating them costs nothing inside a round.
 */
export class OrderPool {
  private readonly ids: number[] = [];
  private created = 0;

  constructor(private readonly db: DatabaseHandle) {}

  async fill(count: number): Promise<void> {
    const orders = createOrdersRepository(this.db.db);
    for (let i = 0; i < count; i++) {
      this.created += 1;
      const { order } = await orders.createWithIdempotencyKey({
        userId: 100_000 + this.created,
        customerEmail: `customer${this.created}@bench.local`,
        totalAmount: ORDER_AMOUNT,
      });
      this.ids.push(order.id);
    }
  }

  /** An unpaid order; creates one on the spot if the pool ran dry (logged, rare). */
  async take(): Promise<number> {
    if (this.ids.length === 0) {
      process.stderr.write('[bench] order pool ran dry; creating orders inside the round\n');
      await this.fill(10);
    }
    return this.ids.shift()!;
  }

  get remaining(): number {
    return this.ids.length;
  }
}
