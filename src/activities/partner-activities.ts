import { ApplicationFailure } from '@temporalio/common';
import type { PartnerPausesRepository, ReleaseSlot } from '../db';
import { FailureType } from '../shared/errors';
import type { Partner, PartnerPauseState } from '../shared/partner';
import { atCrashPoint } from './crash-points';

export interface PartnerActivityDeps {
  partnerPauses: PartnerPausesRepository;
}

export function createPartnerActivities(deps: PartnerActivityDeps) {
  return {
    async partnerPauseState(input: { partner: Partner }): Promise<PartnerPauseState> {
      return deps.partnerPauses.state(input.partner);
    },

    /** A retry after a crash past the commit takes a second slot: slower, never faster. */
    async claimPartnerRelease(input: { partner: Partner }): Promise<ReleaseSlot> {
      return atCrashPoint('claimPartnerRelease.commit', () =>
        deps.partnerPauses.claimRelease(input.partner, Date.now()),
      );
    },
  };
}

/**
 * Checked before a partner call and after it failed (a call in flight when the pause came is not
 * an attempt to count). Non-retryable: the workflow waits for the resume, then calls anew.
 */
export async function failIfPartnerPaused(
  pauses: PartnerPausesRepository,
  partner: Partner,
  cause?: unknown,
): Promise<void> {
  const state = await pauses.state(partner);
  if (!state.paused) return;
  throw ApplicationFailure.create({
    type: FailureType.PartnerPaused,
    message: `${partner} paused by ${state.pausedBy} since ${state.pausedAt}`,
    details: [{ partner, pausedBy: state.pausedBy, pausedAt: state.pausedAt }],
    nonRetryable: true,
    cause: cause instanceof Error ? cause : undefined,
  });
}
