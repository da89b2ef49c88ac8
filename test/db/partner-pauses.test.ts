import { createPartnerPausesRepository, releaseSpacingMs } from '../../src/db';
import { PARTNER_RELEASE_HEADROOM_MS } from '../../src/shared/partner';
import { testDatabases } from '../../harness/databases';
import { useTestDatabase } from '../support/database-fixture';

// The partner pause table: the durable truth every held call reads.
describe.each(testDatabases)('partner pauses ($name)', ({ create }) => {
  const database = useTestDatabase(create, { perTest: true });
  const pauses = database.repository(createPartnerPausesRepository);

  it('reads as not paused before anyone paused', async () => {
    expect(await pauses.state('warehouse')).toEqual({ paused: false });
    expect(await pauses.resume('warehouse')).toEqual({ kind: 'not_paused', pause: undefined });
    expect(await pauses.claimRelease('warehouse', Date.now())).toEqual({ delayMs: 0 });
  });

  it('keeps the first of two pauses, and a resume only once', async () => {
    const first = await pauses.pause('warehouse', 'alice', 'outage');
    const second = await pauses.pause('warehouse', 'bob');
    expect(first.kind).toBe('paused');
    expect(second).toEqual({ kind: 'already_paused', pause: first.pause });
    expect(await pauses.state('warehouse')).toEqual({
      paused: true,
      pausedBy: 'alice',
      pausedAt: first.pause.pausedAt,
      reason: 'outage',
    });
    expect((await pauses.resume('warehouse')).kind).toBe('resumed');
    expect((await pauses.resume('warehouse', 5)).kind).toBe('not_paused');
    // The second resume changed nothing: no rate appeared.
    expect(await pauses.state('warehouse')).toEqual({ paused: false });
    // Paused again after a resume: a new pause, by its new author.
    const again = await pauses.pause('warehouse', 'bob');
    expect(again.kind).toBe('paused');
    expect(again.pause).toMatchObject({ pausedBy: 'bob', reason: null, resumedAt: null });
  });

  it('hands out release slots a tenth wider than 1/rate apart, to concurrent callers too', async () => {
    await pauses.pause('warehouse', 'alice');
    await pauses.resume('warehouse', 4);
    expect(await pauses.state('warehouse')).toEqual({ paused: false, releaseRate: 4 });
    const now = Date.now() + 1_000;
    const delays = await Promise.all(
      Array.from({ length: 8 }, () => pauses.claimRelease('warehouse', now)),
    );
    const spacing = releaseSpacingMs(4);
    expect(spacing).toBe(275);
    expect(delays.map((d) => d.delayMs).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 8 }, (_, i) => PARTNER_RELEASE_HEADROOM_MS + i * spacing),
    );
  });

  it('does not bank slots while nobody claims them: a late claim goes after the headroom, the next one a slot later', async () => {
    await pauses.pause('warehouse', 'alice');
    await pauses.resume('warehouse', 2);
    const later = Date.now() + 60_000;
    const first = later + PARTNER_RELEASE_HEADROOM_MS;
    expect(await pauses.claimRelease('warehouse', later)).toEqual({
      delayMs: PARTNER_RELEASE_HEADROOM_MS,
      releaseAt: first,
    });
    expect(await pauses.claimRelease('warehouse', later)).toEqual({
      delayMs: PARTNER_RELEASE_HEADROOM_MS + releaseSpacingMs(2),
      releaseAt: first + releaseSpacingMs(2),
    });
  });
});
