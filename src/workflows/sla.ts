import {
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { SlaActivities } from '../activities/sla-activities';
import type { Alert } from '../shared/alert';
import { RetryPolicies } from '../shared/retry-policies';
import {
  slaCheckedSignal,
  slaCommand,
  slaPostWorkflowId,
  type SlaCheck,
  type SlaIncidentInput,
} from '../shared/sla';
import { raiseIncidentPost } from './alert';

// A check runs every minute: a read that does not answer within one is better skipped (the
// schedule starts the next one) than left to pile up.
const { findSlaBreaches, reportSlaCheck } = proxyActivities<SlaActivities>({
  ...RetryPolicies.temporalCall,
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '50 seconds',
  summary: 'Check the fulfilment and payment SLAs',
});

/** Short and stateless: each cause's incident workflow decides what is posted. */
export async function slaCheckWorkflow(): Promise<void> {
  const checks = await findSlaBreaches();
  for (const check of checks) await reportSlaCheck(check);
}

/** History events before a long breach hands its incident to a fresh run (a check a minute). */
const CONTINUE_AS_NEW_AFTER_EVENTS = 5_000;

/** Completes once resolved, so the next breach is a new run; each post's ID is its key. */
export async function slaIncidentWorkflow(input: SlaIncidentInput): Promise<void> {
  let latest: SlaCheck | undefined = input.opened;
  setHandler(slaCheckedSignal, (check: SlaCheck) => {
    // A retried report or a late check must not undo a newer one.
    if (check.cause !== input.cause) return;
    if (!latest || check.checkedAt >= latest.checkedAt) latest = check;
  });
  await condition(() => latest !== undefined);
  let opened = input.opened;
  if (!opened) {
    if (latest!.count === 0) return;
    opened = latest!;
    await post(opened, latest!, 'opened');
  }
  for (;;) {
    // Checks come every minute; the incident only wakes to resolve or to keep its history short.
    const resolved = await condition(() => latest!.count === 0, '1 hour');
    if (resolved) break;
    if (
      workflowInfo().continueAsNewSuggested ||
      workflowInfo().historyLength > CONTINUE_AS_NEW_AFTER_EVENTS
    ) {
      await continueAsNew<typeof slaIncidentWorkflow>({ cause: input.cause, opened });
    }
  }
  // A breach checked while this goes out is lost to this run; the next check a minute later
  // finds it again and opens a new incident.
  await post(opened, latest!, 'resolved');
}

async function post(opened: SlaCheck, check: SlaCheck, name: 'opened' | 'resolved') {
  const info = workflowInfo();
  const late = `${opened.slaSeconds} s`;
  const what =
    opened.cause === 'FulfilmentSlaBreached'
      ? `paid order(s) not handed to the warehouse within ${late}`
      : `payment workflow(s) still running after ${late}`;
  const paused =
    check.pausedPartners.length > 0
      ? ` (held on purpose: ${check.pausedPartners.join(', ')} paused by an operator)`
      : '';
  const alert: Alert = {
    kind: name === 'opened' ? 'sla_breached' : 'sla_resolved',
    namespace: info.namespace,
    workflowType: info.workflowType,
    workflowId: info.workflowId,
    runId: info.runId,
    taskQueue: info.taskQueue,
    orderId: null,
    failureType: opened.cause,
    failureMessage:
      name === 'opened'
        ? `${check.count} ${what}${paused}`
        : `no ${what} since ${check.checkedAt} (opened ${opened.checkedAt} with ${opened.count})`,
    rootCauseType: null,
    rootCauseMessage: null,
    attempts: null,
    failedAt: check.checkedAt,
    command: slaCommand(opened.cause),
    // The resolved post lists the orders the incident opened with: the ones to look back at.
    sla:
      name === 'opened'
        ? check
        : { ...check, orderIds: opened.orderIds, workflowIds: opened.workflowIds },
  };
  const workflowId = slaPostWorkflowId(opened.cause, opened.checkedAt, name);
  await raiseIncidentPost(workflowId, alert, 'SLA post');
}
