import { sql, type Kysely, type Selectable } from 'kysely';
import {
  PARTNER_RELEASE_HEADROOM_MS,
  type Partner,
  type PartnerPauseState,
} from '../../shared/partner';
import type { Database, PartnerPausesTable } from '../schema';

/** The last pause of a partner, as the CLI, the doctor and `ops stuck` show it. */
export interface PartnerPause {
  partner: string;
  pausedAt: string;
  pausedBy: string;
  reason: string | null;
  resumedAt: string | null;
  /** The `--rate` of the resume: held calls released at most this many per second. */
  resumeRate: number | null;
}

export type PauseResult =
  | { kind: 'paused'; pause: PartnerPause }
  /** It was paused already: the first pause (who, since when) stays. */
  | { kind: 'already_paused'; pause: PartnerPause };

export type ResumeResult =
  | { kind: 'resumed'; pause: PartnerPause }
  /** Not paused (never, or resumed already): nothing changed. */
  | { kind: 'not_paused'; pause: PartnerPause | undefined };

export interface ReleaseSlot {
  /** From the claim's `nowMs`; 0: at once. */
  delayMs: number;
  /** Epoch ms (the claiming worker's clock); undefined when there is no rate to keep. */
  releaseAt?: number;
}

export interface PartnerPausesRepository {
  pause(partner: Partner, by: string, reason?: string): Promise<PauseResult>;
  /** Ends the pause; with a rate, the held calls are released through its schedule. */
  resume(partner: Partner, rate?: number): Promise<ResumeResult>;
  get(partner: string): Promise<PartnerPause | undefined>;
  list(): Promise<PartnerPause[]>;
  state(partner: Partner): Promise<PartnerPauseState>;
  /**
   * Takes the next release slot: ms to wait from `nowMs` (at least the headroom; 0 without a rate).
   * One atomic UPDATE, so concurrent workers never share a slot; spaced 10 % wider than 1/rate s,
   * so two late-dispatched calls never land in the same second as the next ones.
   */
  claimRelease(partner: Partner, nowMs: number): Promise<ReleaseSlot>;
}

/** A second plus 10 %: the release stays under the rate, whatever the dispatch jitter. */
const RELEASE_SECOND_MS = 1100;

export function releaseSpacingMs(rate: number): number {
  return Math.ceil(RELEASE_SECOND_MS / rate);
}

export function createPartnerPausesRepository(db: Kysely<Database>): PartnerPausesRepository {
  async function get(partner: string): Promise<PartnerPause | undefined> {
    const row = await db
      .selectFrom('partner_pauses')
      .selectAll()
      .where('partner', '=', partner)
      .executeTakeFirst();
    return row && toPause(row);
  }

  return {
    async pause(partner, by, reason) {
      const now = new Date().toISOString();
      // Insert, or restart a resumed row; a row still paused is left as it is (the NULL guard),
      // so two operators pausing at once record one pause: the first.
      const changed = await db
        .insertInto('partner_pauses')
        .values({ partner, paused_at: now, paused_by: by, reason: reason ?? null })
        .onConflict((oc) =>
          oc
            .column('partner')
            .doUpdateSet({
              paused_at: now,
              paused_by: by,
              reason: reason ?? null,
              resumed_at: null,
              resume_rate: null,
              release_cursor_ms: null,
            })
            .where('partner_pauses.resumed_at', 'is not', null),
        )
        .returning('partner')
        .execute();
      const pause = (await get(partner))!;
      return { kind: changed.length > 0 ? 'paused' : 'already_paused', pause };
    },

    async resume(partner, rate) {
      const nowMs = Date.now();
      const changed = await db
        .updateTable('partner_pauses')
        .set({
          resumed_at: new Date(nowMs).toISOString(),
          resume_rate: rate ?? null,
          release_cursor_ms: rate === undefined ? null : nowMs,
        })
        .where('partner', '=', partner)
        .where('resumed_at', 'is', null)
        .returning('partner')
        .execute();
      const pause = await get(partner);
      return changed.length > 0
        ? { kind: 'resumed', pause: pause! }
        : { kind: 'not_paused', pause };
    },

    get,

    async list() {
      const rows = await db.selectFrom('partner_pauses').selectAll().orderBy('partner').execute();
      return rows.map(toPause);
    },

    async state(partner) {
      const pause = await get(partner);
      if (!pause) return { paused: false };
      if (pause.resumedAt === null) {
        return {
          paused: true,
          pausedBy: pause.pausedBy,
          pausedAt: pause.pausedAt,
          reason: pause.reason,
        };
      }
      return pause.resumeRate === null
        ? { paused: false }
        : { paused: false, releaseRate: pause.resumeRate };
    },

    async claimRelease(partner, nowMs) {
      // The slot is the cursor, or the earliest a claim may get (now plus the headroom) when the
      // schedule is behind it: an idle schedule banks no slots for a later burst. The cursor
      // moves one interval on.
      const earliest = nowMs + PARTNER_RELEASE_HEADROOM_MS;
      const row = await db
        .updateTable('partner_pauses')
        .set({
          release_cursor_ms: sql<number>`(case when release_cursor_ms < ${earliest} then ${earliest} else release_cursor_ms end) + ${sql`(${sql.lit(RELEASE_SECOND_MS - 1)} + resume_rate) / resume_rate`}`,
        })
        .where('partner', '=', partner)
        .where('resumed_at', 'is not', null)
        .where('resume_rate', 'is not', null)
        .returning(['release_cursor_ms', 'resume_rate'])
        .executeTakeFirst();
      if (!row || row.resume_rate === null || row.release_cursor_ms === null) return { delayMs: 0 };
      const releaseAt = Number(row.release_cursor_ms) - releaseSpacingMs(row.resume_rate);
      return { delayMs: Math.max(0, releaseAt - nowMs), releaseAt };
    },
  };
}

function toPause(row: Omit<Selectable<PartnerPausesTable>, 'release_cursor_ms'>): PartnerPause {
  return {
    partner: row.partner,
    pausedAt: row.paused_at,
    pausedBy: row.paused_by,
    reason: row.reason,
    resumedAt: row.resumed_at,
    resumeRate: row.resume_rate,
  };
}
