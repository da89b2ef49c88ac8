import type { Kysely } from 'kysely';
import type { Database, UnmatchedDeliveryRow } from '../schema';
import { MISSING_REFERENCE, unlessMissingReference } from './foreign-key';

/** Why a signed delivery could not be acted on. */
export const UNMATCHED_REASONS = [
  'unknown_order',
  'foreign_order_ref',
  'currency',
  'amount_mismatch',
  'livemode',
  'account',
  'thin_unresolved',
] as const;
export type UnmatchedReason = (typeof UNMATCHED_REASONS)[number];

export interface RecordUnmatchedInput {
  reason: UnmatchedReason;
  /** `stripe`, `standard` or `payment` (the contract's own scheme). */
  provider: string;
  /** Provider-qualified, as in the workflow IDs: the key a redelivery is counted under. */
  eventId: string;
  /** The internal event or the provider's object; stored as JSON text. */
  payload: unknown;
  /**
   * The workflow run keeping it (the payment workflow's unknown orders). A second call from the
   * same run (its step retried after a crash that followed the commit) gets `created` again and
   * counts nothing: it is not another delivery.
   */
  recordedByRunId?: string;
}

/** How an operator closed an entry: once, and for good. */
export type UnmatchedResolution =
  /** The payment belongs to this order: it then flows as a normal payment. */
  | { kind: 'attached'; orderId: number; note?: string }
  /** The money was given back outside this system (in the provider's dashboard). */
  | { kind: 'refunded_outside'; note?: string }
  | { kind: 'dismissed'; note: string };

export interface UnmatchedDelivery {
  id: number;
  reason: UnmatchedReason;
  provider: string;
  eventId: string;
  payload: unknown;
  deliveryCount: number;
  firstSeenAt: string;
  lastSeenAt: string;
  /** Null while open. */
  resolution: (UnmatchedResolution & { resolvedAt: string }) | null;
}

export type ResolveUnmatchedResult =
  | { kind: 'resolved'; delivery: UnmatchedDelivery }
  /** Someone resolved it first (possibly this same resolution, run again); nothing changed. */
  | { kind: 'already_resolved'; delivery: UnmatchedDelivery }
  | { kind: 'not_found' }
  /** `attached` to an order that does not exist; nothing changed. */
  | { kind: 'order_not_found' };

export interface UnmatchedRepository {
  /**
   * Keeps the delivery, or counts it again when its event ID is already kept: exactly one call
   * per event ID gets `created`. An open entry takes the latest reason and payload (a thin event
   * recorded as unresolved may later be known as an unknown order); a resolved one only counts.
   */
  record(input: RecordUnmatchedInput): Promise<{ id: number; created: boolean }>;
  /**
   * Counts a redelivery of an event kept for `reason`, when one is kept: the edge's answer to a
   * duplicate start of a workflow that kept its event here. Undefined (nothing counted) when none.
   */
  countRedelivery(eventId: string, reason: UnmatchedReason): Promise<{ id: number } | undefined>;
  get(id: number): Promise<UnmatchedDelivery | undefined>;
  findByEventId(eventId: string): Promise<UnmatchedDelivery | undefined>;
  /** Newest first, at most `limit` (default 100). */
  list(options?: {
    state?: 'open' | 'resolved' | 'all';
    limit?: number;
  }): Promise<UnmatchedDelivery[]>;
  /** Closes an open entry; an entry is resolved exactly once, whoever asks how often. */
  resolve(id: number, resolution: UnmatchedResolution): Promise<ResolveUnmatchedResult>;
}

/** What the webhook edge needs of the inbox: keep a delivery, count a kept one's redelivery. */
export type UnmatchedInbox = Pick<UnmatchedRepository, 'record' | 'countRedelivery'>;

const DEFAULT_LIST_LIMIT = 100;

export function createUnmatchedRepository(db: Kysely<Database>): UnmatchedRepository {
  /** The entry with this ID or event ID (each UNIQUE). */
  async function findBy(
    key: { id: number } | { eventId: string },
  ): Promise<UnmatchedDelivery | undefined> {
    const row = await db
      .selectFrom('unmatched_deliveries')
      .selectAll()
      .where((eb) => ('id' in key ? eb('id', '=', key.id) : eb('event_id', '=', key.eventId)))
      .executeTakeFirst();
    return row && toDelivery(row);
  }

  return {
    async record(input) {
      const now = new Date().toISOString();
      const payload = JSON.stringify(input.payload ?? null);
      // Insert-or-count with the UNIQUE constraint as the judge, as payments do: RETURNING
      // yields a row only to the call that inserted it. Rows are never deleted, so the update
      // after a conflict always finds one (PostgreSQL makes it wait for a concurrent insert).
      const inserted = await db
        .insertInto('unmatched_deliveries')
        .values({
          reason: input.reason,
          provider: input.provider,
          event_id: input.eventId,
          payload,
          first_seen_at: now,
          last_seen_at: now,
          recorded_by_run_id: input.recordedByRunId ?? null,
        })
        .onConflict((oc) => oc.column('event_id').doNothing())
        .returning('id')
        .executeTakeFirst();
      if (inserted) return { id: inserted.id, created: true };

      if (input.recordedByRunId !== undefined) {
        // Our own row from an earlier attempt of this run: the same delivery, not another.
        const own = await db
          .selectFrom('unmatched_deliveries')
          .select('id')
          .where('event_id', '=', input.eventId)
          .where('recorded_by_run_id', '=', input.recordedByRunId)
          .executeTakeFirst();
        if (own) return { id: own.id, created: true };
      }
      const counted = await db
        .updateTable('unmatched_deliveries')
        .set((eb) => ({
          delivery_count: eb('delivery_count', '+', 1),
          last_seen_at: now,
          reason: eb
            .case()
            .when('resolved_at', 'is', null)
            .then(input.reason)
            .else(eb.ref('reason'))
            .end(),
          payload: eb
            .case()
            .when('resolved_at', 'is', null)
            .then(payload)
            .else(eb.ref('payload'))
            .end(),
        }))
        .where('event_id', '=', input.eventId)
        .returning('id')
        .executeTakeFirstOrThrow();
      return { id: counted.id, created: false };
    },

    async countRedelivery(eventId, reason) {
      return db
        .updateTable('unmatched_deliveries')
        .set((eb) => ({
          delivery_count: eb('delivery_count', '+', 1),
          last_seen_at: new Date().toISOString(),
        }))
        .where('event_id', '=', eventId)
        .where('reason', '=', reason)
        .returning('id')
        .executeTakeFirst();
    },

    get: (id) => findBy({ id }),

    findByEventId: (eventId) => findBy({ eventId }),

    async list({ state = 'open', limit = DEFAULT_LIST_LIMIT } = {}) {
      let query = db.selectFrom('unmatched_deliveries').selectAll();
      if (state === 'open') query = query.where('resolved_at', 'is', null);
      if (state === 'resolved') query = query.where('resolved_at', 'is not', null);
      const rows = await query.orderBy('id', 'desc').limit(limit).execute();
      return rows.map(toDelivery);
    },

    async resolve(id, resolution) {
      // The NULL guard is the claim: of two operators resolving at once, one updates the row.
      const updated = await unlessMissingReference(() =>
        db
          .updateTable('unmatched_deliveries')
          .set({
            resolution: resolution.kind,
            resolved_order_id: resolution.kind === 'attached' ? resolution.orderId : null,
            resolution_note: resolution.note ?? null,
            resolved_at: new Date().toISOString(),
          })
          .where('id', '=', id)
          .where('resolved_at', 'is', null)
          .returningAll()
          .executeTakeFirst(),
      );
      if (updated === MISSING_REFERENCE) return { kind: 'order_not_found' };
      if (updated) return { kind: 'resolved', delivery: toDelivery(updated) };
      const existing = await findBy({ id });
      return existing ? { kind: 'already_resolved', delivery: existing } : { kind: 'not_found' };
    },
  };
}

function toDelivery(row: UnmatchedDeliveryRow): UnmatchedDelivery {
  return {
    id: row.id,
    reason: row.reason as UnmatchedReason,
    provider: row.provider,
    eventId: row.event_id,
    payload: JSON.parse(row.payload) as unknown,
    deliveryCount: row.delivery_count,
    firstSeenAt: row.first_seen_at,
    lastSeenAt: row.last_seen_at,
    resolution: toResolution(row),
  };
}

function toResolution(row: UnmatchedDeliveryRow): UnmatchedDelivery['resolution'] {
  if (row.resolved_at === null) return null;
  const note = row.resolution_note ?? undefined;
  const resolvedAt = row.resolved_at;
  switch (row.resolution) {
    case 'attached':
      return { kind: 'attached', orderId: Number(row.resolved_order_id), note, resolvedAt };
    case 'refunded_outside':
      return { kind: 'refunded_outside', note, resolvedAt };
    default:
      return { kind: 'dismissed', note: note ?? '', resolvedAt };
  }
}
