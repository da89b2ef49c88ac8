/** A verified Stripe thin event notification (`v2.core.event`), as much of it as the fetch needs. */
export interface StripeThinNotification {
  id: string;
  object: 'v2.core.event';
  /** `v1.payment_intent.succeeded`, …: the snapshot event's type with a `v1.` prefix. */
  type: string;
  livemode: boolean;
  /** The account the event happened on (`acct_…`), when not the platform's own. */
  context?: string;
  related_object: { id: string; type: string; url: string };
}

/** Input of the thin event workflow: the notification the HTTP edge verified. */
export interface ThinEventWorkflowInput {
  /** Provider-qualified (`stripe~evt_…`): the key of whatever the event becomes. */
  eventId: string;
  notification: StripeThinNotification;
}

/** Workflow ID of the fetch of one thin event: one per event, whatever the redeliveries. */
export function thinEventWorkflowId(eventId: string): string {
  return `thin-${eventId}`;
}

/** What became of a thin event, kept in its workflow's history. */
export type ThinEventResult =
  /** Its object was fetched and the payment, refund or dispute workflow started (or found). */
  | { kind: 'started'; workflowId: string; duplicate: boolean }
  /** Kept in the unmatched inbox (`reason`), for an operator. */
  | { kind: 'unmatched'; unmatchedId: number; reason: string }
  /** An event type or object this shop does not act on. */
  | { kind: 'ignored'; note?: string };
