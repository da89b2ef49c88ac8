import { defineSignal } from '@temporalio/workflow';

// The `partner_pauses` table is the durable truth of a pause (docs/operations.md): order
// workflows ask it before each call and wait while paused, spending no attempt and no deadline.

export const PARTNERS = ['warehouse'] as const;
export type Partner = (typeof PARTNERS)[number];

export function isPartner(name: string): name is Partner {
  return (PARTNERS as readonly string[]).includes(name);
}

export type PartnerPauseState =
  | { paused: false; releaseRate?: undefined }
  | { paused: true; pausedBy: string; pausedAt: string; reason: string | null }
  /** Resumed with `--rate N`: held calls take a slot of N per second; others go as usual. */
  | { paused: false; releaseRate: number };

/**
 * A held run waits for the resume's signal. It also reads the table again after 1 minute, then
 * 2, 4, 8… up to an hour between reads, for a run the signal missed (`ops partner resume` found
 * it through visibility, which lags). Each read costs a workflow task and six history events: a
 * fixed minute cost 1,440 of them a day per held order (8,640 events: past the server's
 * continue-as-new suggestion in one day, its 51,200-event limit in six); this costs 29 a day.
 */
export const PARTNER_PAUSE_RECHECK_MS = { first: 60_000, longest: 60 * 60_000 } as const;

/** The longest wait of a held run the resume's signal missed, as the operator reads it. */
export const PARTNER_PAUSE_LONGEST_RECHECK = `${PARTNER_PAUSE_RECHECK_MS.longest / 60_000} minutes`;

/** Wakes order workflows waiting on the partner; carries nothing, so a late one cannot mislead. */
export const partnerPauseChangedSignal = defineSignal<[]>('partnerPauseChanged');

/**
 * A released call's workflow wakes this long before its slot and its activity waits out the
 * rest, so the slot is kept at the partner's door, not after a timer, a workflow task and an
 * activity dispatch (up to a few hundred ms late under load, crowding the next second).
 */
export const PARTNER_RELEASE_LEAD_MS = 700;

/** The lead plus a margin for an early timer; under the warehouse call's 8 s start-to-close. */
export const PARTNER_RELEASE_MAX_WAIT_MS = 800;

/** No slot sooner than this after its claim, so every released workflow wakes a full lead early. */
export const PARTNER_RELEASE_HEADROOM_MS = 1_500;

export interface PartnerRelease {
  notBefore: number;
}
