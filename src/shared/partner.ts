import { defineSignal } from '@temporalio/workflow';

/**
 * Partner pause: an operator holds every call to a partner (`npm run ops -- partner pause
 * warehouse`) during its outage, and releases them (`partner resume warehouse --rate N`). The
 * `partner_pauses` table is the durable truth; the order workflows ask it before each call and
 * wait while it says paused, so no attempt and no deadline is spent. docs/operations.md.
 */

/** The partners that can be paused: the names the CLI, the table and the gauge use. */
export const PARTNERS = ['warehouse'] as const;
export type Partner = (typeof PARTNERS)[number];

export function isPartner(name: string): name is Partner {
  return (PARTNERS as readonly string[]).includes(name);
}

/** What a call to the partner must do now; read from the table by the `partnerPauseState` step. */
export type PartnerPauseState =
  | { paused: false; releaseRate?: undefined }
  /** Held: no call starts until it is resumed. */
  | { paused: true; pausedBy: string; pausedAt: string; reason: string | null }
  /**
   * Resumed with `--rate N`: calls that were held take a slot in a schedule of N per second
   * (`claimPartnerRelease`); calls that were never held go as usual.
   */
  | { paused: false; releaseRate: number };

/**
 * Sent by `ops partner resume` to the order workflows waiting on the partner (found by the
 * `PartnerPaused` search attribute) so they look again at once instead of at their next re-check.
 * Carries nothing: the table says what to do, so a late or repeated signal cannot mislead.
 */
export const partnerPauseChangedSignal = defineSignal<[]>('partnerPauseChanged');

/**
 * A released call's workflow wakes this long before its slot, and its activity waits out the
 * rest to the millisecond before it calls: the slot is kept at the partner's door, not at the
 * end of a timer, a workflow task and an activity dispatch (a few to a few hundred milliseconds
 * late under load; a call that arrived late would crowd the next ones into one second).
 */
export const PARTNER_RELEASE_LEAD_MS = 700;

/**
 * The longest a released call's activity waits for its slot: the lead plus a margin for an
 * early timer. With the warehouse client's longest timeout (7 s) it stays under the call's 8 s
 * start-to-close.
 */
export const PARTNER_RELEASE_MAX_WAIT_MS = 800;

/**
 * No slot is sooner than this after its claim, so every released workflow sleeps and wakes a
 * full lead before its slot, the first ones after a resume included.
 */
export const PARTNER_RELEASE_HEADROOM_MS = 1_500;

/** A released call: the activity does not call before `notBefore` (epoch ms). */
export interface PartnerRelease {
  notBefore: number;
}
