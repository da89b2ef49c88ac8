import type { Client } from '@temporalio/client';
import { partnerPauseChangedSignal, type Partner } from '../shared/partner';
import { mapConcurrently, DESCRIBE_CONCURRENCY } from './visibility';

/** The raw listing, as the other operator lists read it: an undecodable memo cannot abort it. */
export async function heldWorkflowIds(client: Client, partner: Partner): Promise<string[]> {
  const ids = new Set<string>();
  let nextPageToken: Uint8Array | undefined;
  do {
    const response = await client.workflowService.listWorkflowExecutions({
      namespace: client.options.namespace,
      // The partner is one of PARTNERS (checked by the caller), so it needs no quoting.
      query: `ExecutionStatus = 'Running' AND PartnerPaused = '${partner}'`,
      nextPageToken,
    });
    for (const { execution } of response.executions ?? []) {
      if (execution?.workflowId) ids.add(execution.workflowId);
    }
    nextPageToken = response.nextPageToken?.length ? response.nextPageToken : undefined;
  } while (nextPageToken);
  return [...ids];
}

export interface WakeOutcome {
  signalled: number;
  /** Held workflows the signal missed (closed meanwhile, or an error): they read the table at their next re-check. */
  missed: number;
}

/**
 * The wake-up that ends a held run's wait. A run the signal missed (lost, or not listed yet by
 * visibility) finds the resume at its next re-check (PARTNER_PAUSE_RECHECK_MS: at most an hour
 * apart), or at once when this runs again: every run still held is signalled again.
 */
export async function wakeHeldWorkflows(client: Client, partner: Partner): Promise<WakeOutcome> {
  const held = await heldWorkflowIds(client, partner);
  const sent = await mapConcurrently(held, DESCRIBE_CONCURRENCY, (workflowId) =>
    client.workflow
      .getHandle(workflowId)
      .signal(partnerPauseChangedSignal)
      .then(
        () => true,
        () => false,
      ),
  );
  const signalled = sent.filter(Boolean).length;
  return { signalled, missed: sent.length - signalled };
}
