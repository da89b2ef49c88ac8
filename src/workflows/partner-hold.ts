import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  isCancellation,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { FailureType } from '../shared/errors';
import {
  PARTNER_PAUSE_RECHECK_MS,
  PARTNER_RELEASE_LEAD_MS,
  partnerPauseChangedSignal,
  type Partner,
  type PartnerRelease,
} from '../shared/partner';
import { RetryPolicies } from '../shared/retry-policies';
import { PartnerPausedSearchAttribute } from '../shared/search-attributes';
import { localStep } from './local-step';

// Not Temporal's activity pause (server 1.29.1): it misses calls scheduled after it runs, and a
// paused activity's schedule-to-close deadline keeps running (compensations anyway). Here the
// table is the truth every call consults, and the wait is a durable timer plus a signal.

const steps = {
  partnerPauseState: localStep('partnerPauseState', {
    ...RetryPolicies.databaseStep,
    summary: 'Read whether an operator paused the partner',
  }),
  claimPartnerRelease: localStep('claimPartnerRelease', {
    ...RetryPolicies.databaseStep,
    summary: "Take a slot in the partner's rate-limited release",
  }),
};

/**
 * After the resume, calls again with a fresh retry policy: no attempt or deadline is spent while
 * paused, nothing compensated.
 */
export async function unlessPartnerPaused<T>(
  partner: Partner,
  call: (release?: PartnerRelease) => Promise<T>,
): Promise<T> {
  let release: PartnerRelease | undefined;
  for (;;) {
    try {
      return await call(release);
    } catch (err) {
      if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
      if (!isPartnerPaused(err) && !(await steps.partnerPauseState({ partner })).paused) throw err;
      release = await holdWhilePaused(partner);
    }
  }
}

function isPartnerPaused(err: ActivityFailure): boolean {
  return err.cause instanceof ApplicationFailure && err.cause.type === FailureType.PartnerPaused;
}

/** Resumed with a rate: waits until just before its slot (the activity waits the rest). */
async function holdWhilePaused(partner: Partner): Promise<PartnerRelease | undefined> {
  let changed = false;
  setHandler(partnerPauseChangedSignal, () => {
    changed = true;
  });
  // What `ops partner resume` signals and `ops stuck` groups: `PartnerPaused = 'warehouse'`.
  upsertSearchAttributes([{ key: PartnerPausedSearchAttribute, value: partner }]);
  try {
    for (let recheckMs: number = PARTNER_PAUSE_RECHECK_MS.first; ;) {
      // Before the read: a resume signalled while it runs must still end the wait below.
      changed = false;
      const state = await steps.partnerPauseState({ partner });
      if (!state.paused) {
        if (state.releaseRate === undefined) return undefined;
        const { delayMs, releaseAt } = await steps.claimPartnerRelease({ partner });
        setCurrentDetails(
          `released: ${partner} resumed at ${state.releaseRate}/s, calling in ${Math.ceil(delayMs / 1000)} s`,
        );
        if (delayMs > PARTNER_RELEASE_LEAD_MS) await sleep(delayMs - PARTNER_RELEASE_LEAD_MS);
        return releaseAt === undefined ? undefined : { notBefore: releaseAt };
      }
      const why = state.reason ? ` (${state.reason})` : '';
      setCurrentDetails(
        `waiting: ${partner} paused by ${state.pausedBy} since ${state.pausedAt}${why}`,
      );
      if (!(await condition(() => changed, recheckMs))) {
        recheckMs = Math.min(recheckMs * 2, PARTNER_PAUSE_RECHECK_MS.longest);
      }
    }
  } finally {
    upsertSearchAttributes([{ key: PartnerPausedSearchAttribute, value: null }]);
    setCurrentDetails('');
  }
}
