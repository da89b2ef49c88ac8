import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { OrdersRepository, PartnerPausesRepository } from '../db';
import { PARTNERS } from '../shared/partner';
import { OrderIdSearchAttribute } from '../shared/search-attributes';
import { orderWorkflowId } from '../shared/order';
import {
  DEFAULT_SLA,
  MAX_SLA_LISTED,
  SLA_INCIDENT_WORKFLOW_TYPE,
  slaCheckedSignal,
  slaIncidentWorkflowId,
  type SlaCheck,
  type SlaIncidentWorkflow,
} from '../shared/sla';
import { atCrashPoint } from './crash-points';

export interface SlaActivityDeps {
  client: Client;
  orders: Pick<OrdersRepository, 'paidAwaitingShipment'>;
  partnerPauses: Pick<PartnerPausesRepository, 'get'>;
  sla?: { fulfilmentMs: number; paymentMs: number };
}

export function createSlaActivities(deps: SlaActivityDeps) {
  const sla = deps.sla ?? DEFAULT_SLA;
  return {
    /** Reads both SLAs once: a paid order not handed over in time, a payment workflow running long. */
    async findSlaBreaches(): Promise<SlaCheck[]> {
      const now = Date.now();
      const checkedAt = new Date(now).toISOString();
      return Promise.all([fulfilment(now, checkedAt), payment(now, checkedAt)]);
    },

    /**
     * A breach starts the incident when none runs; a clean check only tells a running one. The
     * incident takes the newest check, so a retry's repeat changes nothing.
     */
    async reportSlaCheck(check: SlaCheck): Promise<void> {
      const workflowId = slaIncidentWorkflowId(check.cause);
      await atCrashPoint('reportSlaCheck.signal', async () => {
        if (check.count > 0) {
          await deps.client.workflow.signalWithStart<SlaIncidentWorkflow, [SlaCheck]>(
            SLA_INCIDENT_WORKFLOW_TYPE,
            {
              workflowId,
              taskQueue: Context.current().info.taskQueue,
              args: [{ cause: check.cause }],
              signal: slaCheckedSignal,
              signalArgs: [check],
            },
          );
          return;
        }
        try {
          await deps.client.workflow.getHandle(workflowId).signal(slaCheckedSignal, check);
        } catch (err) {
          // No incident open (never, or resolved and completed): nothing to resolve.
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        }
      });
    },
  };

  async function fulfilment(now: number, checkedAt: string): Promise<SlaCheck> {
    const before = new Date(now - sla.fulfilmentMs).toISOString();
    const { count, ids } = await deps.orders.paidAwaitingShipment(before, MAX_SLA_LISTED);
    const pausedPartners: string[] = [];
    if (count > 0) {
      for (const partner of PARTNERS) {
        const pause = await deps.partnerPauses.get(partner);
        if (pause && pause.resumedAt === null) pausedPartners.push(partner);
      }
    }
    return {
      cause: 'FulfilmentSlaBreached',
      checkedAt,
      slaSeconds: Math.round(sla.fulfilmentMs / 1000),
      count,
      orderIds: ids,
      workflowIds: ids.map(orderWorkflowId),
      pausedPartners,
    };
  }

  async function payment(now: number, checkedAt: string): Promise<SlaCheck> {
    const before = new Date(now - sla.paymentMs).toISOString();
    const query = `WorkflowType = 'paymentWorkflow' AND ExecutionStatus = 'Running' AND StartTime < '${before}'`;
    const [{ count }, listed] = await Promise.all([
      deps.client.workflow.count(query),
      (async () => {
        const found: Array<{ workflowId: string; orderId: number | undefined }> = [];
        for await (const run of deps.client.workflow.list({ query, pageSize: MAX_SLA_LISTED })) {
          const orderId = run.typedSearchAttributes.get(OrderIdSearchAttribute);
          found.push({ workflowId: run.workflowId, orderId });
          if (found.length >= MAX_SLA_LISTED) break;
        }
        return found;
      })(),
    ]);
    return {
      cause: 'PaymentSlaBreached',
      checkedAt,
      slaSeconds: Math.round(sla.paymentMs / 1000),
      // Visibility counts and lists separately: never report fewer than were listed.
      count: Math.max(count, listed.length),
      orderIds: listed.flatMap((r) => (r.orderId === undefined ? [] : [r.orderId])),
      workflowIds: listed.map((r) => r.workflowId),
      pausedPartners: [],
    };
  }
}

/** What the SLA check proxies (src/workflows/sla.ts); not part of the order flow's Activities. */
export type SlaActivities = ReturnType<typeof createSlaActivities>;
