import {
  createUnmatchedRepository,
  type RecordUnmatchedInput,
  type UnmatchedReason,
} from '../../src/db/repositories/unmatched';
import { testDatabases } from '../../harness/databases';
import { useTestDatabase } from '../support/database-fixture';

// SQLite's "CHECK constraint failed: …", PostgreSQL's "… violates check constraint "…"".
const CHECK_VIOLATION = /check constraint/i;

// The unmatched inbox: every signed delivery we could not act on, kept until an operator decides.
describe.each(testDatabases)('unmatched deliveries ($name)', ({ create }) => {
  const database = useTestDatabase(create);
  const inbox = database.repository(createUnmatchedRepository);

  const payload = { eventId: 'stripe~evt_1', orderId: 99, amount: 1200 };
  /** Keeps a delivery, of the payload above unless `more` says otherwise. */
  const keep = (
    reason: UnmatchedReason,
    provider: string,
    eventId: string,
    more: Partial<RecordUnmatchedInput> = {},
  ) => inbox.record({ reason, provider, eventId, payload, ...more });

  it('keeps a delivery once and counts its redeliveries', async () => {
    const first = await keep('unknown_order', 'stripe', 'stripe~evt_count');
    expect(first.created).toBe(true);
    const again = await keep('unknown_order', 'stripe', 'stripe~evt_count');
    expect(again).toEqual({ id: first.id, created: false });

    const kept = await inbox.get(first.id);
    expect(kept).toMatchObject({
      reason: 'unknown_order',
      provider: 'stripe',
      eventId: 'stripe~evt_count',
      payload,
      deliveryCount: 2,
      resolution: null,
    });
    expect(kept!.lastSeenAt >= kept!.firstSeenAt).toBe(true);
    expect(await inbox.findByEventId('stripe~evt_count')).toEqual(kept);
    expect(await inbox.findByEventId('stripe~evt_other')).toBeUndefined();
  });

  it('lets concurrent records of one event agree on a single creator', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        inbox.record({ reason: 'currency', provider: 'standard', eventId: 'standard~c', payload }),
      ),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect((await inbox.findByEventId('standard~c'))?.deliveryCount).toBe(8);
  });

  it("tells the run that kept an entry created again without counting; another run's call counts", async () => {
    const input = {
      reason: 'unknown_order' as const,
      provider: 'payment',
      eventId: 'evt_run',
      payload,
      recordedByRunId: 'run-a',
    };
    const first = await inbox.record(input);
    const retried = await inbox.record(input);
    const other = await inbox.record({ ...input, recordedByRunId: 'run-b' });
    // The edge keeps without a run ID: never mistaken for a run's own row (NULL is no match).
    const edge = await inbox.record({ ...input, recordedByRunId: undefined });

    expect(first.created).toBe(true);
    expect(retried).toEqual(first);
    expect(other).toEqual({ id: first.id, created: false });
    expect(edge).toEqual({ id: first.id, created: false });
    expect((await inbox.get(first.id))?.deliveryCount).toBe(3);
  });

  it('counts a redelivery only of an entry kept for the reason asked about', async () => {
    const { id } = await keep('unknown_order', 'stripe', 'stripe~evt_redelivered');
    await keep('currency', 'stripe', 'stripe~evt_usd');

    expect(await inbox.countRedelivery('stripe~evt_redelivered', 'unknown_order')).toEqual({ id });
    expect(await inbox.countRedelivery('stripe~evt_usd', 'unknown_order')).toBeUndefined();
    expect(await inbox.countRedelivery('stripe~evt_never_kept', 'unknown_order')).toBeUndefined();
    const counted = await inbox.get(id);
    expect(counted?.deliveryCount).toBe(2);
    expect(counted!.lastSeenAt >= counted!.firstSeenAt).toBe(true);
    expect((await inbox.findByEventId('stripe~evt_usd'))?.deliveryCount).toBe(1);
  });

  it('takes the latest reason while open, and only counts once resolved', async () => {
    const { id } = await keep('thin_unresolved', 'stripe', 'stripe~evt_thin', {
      payload: { thin: true },
    });
    await keep('unknown_order', 'stripe', 'stripe~evt_thin');
    expect(await inbox.get(id)).toMatchObject({ reason: 'unknown_order', payload });

    await inbox.resolve(id, { kind: 'dismissed', note: 'test payment' });
    await keep('livemode', 'stripe', 'stripe~evt_thin', { payload: { late: true } });
    expect(await inbox.get(id)).toMatchObject({
      reason: 'unknown_order',
      payload,
      deliveryCount: 3,
      resolution: { kind: 'dismissed', note: 'test payment' },
    });
  });

  it('resolves an entry exactly once, whoever asks how often', async () => {
    const order = await database.newOrder();
    const { id } = await keep('unknown_order', 'payment', 'evt_attach');

    const results = await Promise.all([
      inbox.resolve(id, { kind: 'attached', orderId: order.id }),
      inbox.resolve(id, { kind: 'dismissed', note: 'duplicate' }),
      inbox.resolve(id, { kind: 'refunded_outside' }),
    ]);
    const winners = results.flatMap((r) => (r.kind === 'resolved' ? [r.delivery] : []));
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'already_resolved')).toHaveLength(2);
    const resolved = await inbox.get(id);
    expect(resolved?.resolution).toEqual(winners[0]?.resolution);
    expect(resolved?.resolution?.resolvedAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
  });

  it('records which order an entry was attached to, and refuses an order that does not exist', async () => {
    const order = await database.newOrder();
    const { id } = await keep('foreign_order_ref', 'stripe', 'stripe~evt_ref');
    expect(await inbox.resolve(id, { kind: 'attached', orderId: 987_654 })).toEqual({
      kind: 'order_not_found',
    });
    expect((await inbox.get(id))?.resolution).toBeNull();

    const attached = await inbox.resolve(id, {
      kind: 'attached',
      orderId: order.id,
      note: 'ORD-12 is order 12',
    });
    expect(attached).toMatchObject({
      kind: 'resolved',
      delivery: {
        resolution: { kind: 'attached', orderId: order.id, note: 'ORD-12 is order 12' },
      },
    });
    expect(await inbox.resolve(987_655, { kind: 'dismissed', note: 'x' })).toEqual({
      kind: 'not_found',
    });
  });

  it('lists open entries newest first, and resolved ones apart', async () => {
    const a = await keep('account', 'stripe', 'l-a');
    const b = await keep('account', 'stripe', 'l-b');
    await inbox.resolve(a.id, { kind: 'refunded_outside', note: 'in the dashboard' });

    const open = (await inbox.list()).map((d) => d.id);
    expect(open).toContain(b.id);
    expect(open).not.toContain(a.id);
    expect(open).toEqual([...open].sort((x, y) => y - x));
    const resolved = (await inbox.list({ state: 'resolved' })).map((d) => d.id);
    expect(resolved).toContain(a.id);
    expect(resolved).not.toContain(b.id);
    const all = (await inbox.list({ state: 'all' })).map((d) => d.id);
    expect(all).toEqual(expect.arrayContaining([a.id, b.id]));
    expect(await inbox.list({ state: 'all', limit: 1 })).toHaveLength(1);
  });

  it('reads each kind of resolution back with its note, and a missing note as none', async () => {
    const order = await database.newOrder();
    const keepId = async (eventId: string) => (await keep('unknown_order', 'payment', eventId)).id;
    const resolvedAt = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/);

    const attached = await inbox.resolve(await keepId('r-attached'), {
      kind: 'attached',
      orderId: order.id,
    });
    const outside = await inbox.resolve(await keepId('r-outside'), {
      kind: 'refunded_outside',
      note: 'refunded in the dashboard',
    });
    const bare = await inbox.resolve(await keepId('r-bare'), { kind: 'refunded_outside' });
    const dismissed = await inbox.resolve(await keepId('r-dismissed'), {
      kind: 'dismissed',
      note: 'a test payment',
    });

    expect(attached).toMatchObject({ kind: 'resolved' });
    const resolutionOf = async (eventId: string) =>
      (await inbox.findByEventId(eventId))?.resolution;
    // Read back from the table, not from the call's own answer.
    expect(await resolutionOf('r-attached')).toStrictEqual({
      kind: 'attached',
      orderId: order.id,
      note: undefined,
      resolvedAt,
    });
    expect(await resolutionOf('r-outside')).toStrictEqual({
      kind: 'refunded_outside',
      note: 'refunded in the dashboard',
      resolvedAt,
    });
    expect(await resolutionOf('r-bare')).toStrictEqual({
      kind: 'refunded_outside',
      note: undefined,
      resolvedAt,
    });
    expect(await resolutionOf('r-dismissed')).toStrictEqual({
      kind: 'dismissed',
      note: 'a test payment',
      resolvedAt,
    });
    for (const result of [outside, bare, dismissed]) expect(result.kind).toBe('resolved');

    // A dismissal always has a note through the repository, but the table allows none (a row
    // written by hand): it reads back as an empty note, not as a missing one.
    await database.handle.db
      .updateTable('unmatched_deliveries')
      .set({ resolution_note: null })
      .where('event_id', '=', 'r-dismissed')
      .execute();
    expect(await resolutionOf('r-dismissed')).toStrictEqual({
      kind: 'dismissed',
      note: '',
      resolvedAt,
    });
  });

  it('keeps a delivery without a payload as JSON null', async () => {
    const { id } = await keep('thin_unresolved', 'stripe', 'stripe~evt_no_payload', {
      payload: undefined,
    });
    expect((await inbox.get(id))?.payload).toBeNull();
    expect(await inbox.get(987_654)).toBeUndefined();
  });

  it('lets a database failure through instead of calling it a missing order', async () => {
    const { id } = await keep('unknown_order', 'payment', 'evt_hostile_resolution');
    // A resolution the table's CHECK refuses carries an error code, but not the foreign key's.
    await expect(
      inbox.resolve(id, { kind: 'forgotten' } as unknown as { kind: 'refunded_outside' }),
    ).rejects.toThrow(CHECK_VIOLATION);
    expect((await inbox.get(id))?.resolution).toBeNull();

    const broken = await create();
    await broken.close();
    await expect(
      createUnmatchedRepository(broken.db).resolve(id, { kind: 'dismissed', note: 'x' }),
    ).rejects.toThrow();
  });

  it('refuses rows of a shape no resolution has (the CHECK constraints)', async () => {
    const { id } = await keep('unknown_order', 'payment', 'evt_check');
    const now = new Date().toISOString();
    // The changed-row count: a refusal's promise that resolved would show it (0: no row matched).
    const update = async (values: Record<string, unknown>) =>
      (
        await database.handle.db
          .updateTable('unmatched_deliveries')
          .set(values)
          .where('id', '=', id)
          .executeTakeFirstOrThrow()
      ).numUpdatedRows;

    // An attachment without its order; a resolution without its moment; an order on a
    // dismissal; a count under one. (A moment with a NULL resolution passes: the CHECK is NULL,
    // not false, under SQL's three-valued logic; the repository never writes one.)
    await expect(update({ resolution: 'attached', resolved_at: now })).rejects.toThrow(
      CHECK_VIOLATION,
    );
    await expect(update({ resolution: 'dismissed' })).rejects.toThrow(CHECK_VIOLATION);
    const order = await database.newOrder();
    await expect(
      update({ resolution: 'dismissed', resolved_at: now, resolved_order_id: order.id }),
    ).rejects.toThrow(CHECK_VIOLATION);
    await expect(update({ delivery_count: 0 })).rejects.toThrow(CHECK_VIOLATION);
    expect(await inbox.get(id)).toMatchObject({ deliveryCount: 1, resolution: null });
    // The shape an attachment has is accepted.
    expect(
      await update({ resolution: 'attached', resolved_at: now, resolved_order_id: order.id }),
    ).toBe(1n);
    expect((await inbox.get(id))?.resolution).toMatchObject({
      kind: 'attached',
      orderId: order.id,
    });
  });
});
