import fc from 'fast-check';
import {
  disputeOutcome,
  disputeWorkflowId,
  type RecordedDispute,
  type RecordedRefund,
  refundedTotal,
  refundWorkflowId,
} from '../../src/shared/payment-events';

// The contract between the edge and the order side, read directly: the workflow IDs a refund or
// dispute delivery is deduplicated by, and the totals the order's columns are computed from. The
// workflow tests reach these only through a Temporal server (and are not in the intake scope).

const refund = (
  refundId: string | null,
  amount: number,
  status: RecordedRefund['status'],
): RecordedRefund => ({ kind: 'refund', refundId, amount, status });
const cumulative = (amount: number, status: RecordedRefund['status']): RecordedRefund => ({
  kind: 'cumulative',
  refundId: null,
  amount,
  status,
});

describe('workflow IDs of refund and dispute events', () => {
  it('key each event by its provider-qualified ID, one prefix per kind', () => {
    expect(refundWorkflowId('stripe~evt_1')).toBe('refund-stripe~evt_1');
    expect(disputeWorkflowId('stripe~evt_1')).toBe('dispute-stripe~evt_1');
  });
});

describe('refundedTotal', () => {
  it('is 0 with nothing recorded and with only pending, failed or canceled refunds', () => {
    expect(refundedTotal([])).toBe(0);
    expect(
      refundedTotal([
        refund('re_1', 500, 'pending'),
        refund('re_2', 600, 'failed'),
        refund('re_3', 700, 'canceled'),
        cumulative(800, 'pending'),
      ]),
    ).toBe(0);
  });

  it('adds up the succeeded refunds, each once however often it was reported', () => {
    const events = [
      refund('re_1', 300, 'succeeded'),
      refund('re_2', 200, 'succeeded'),
      refund('re_1', 300, 'succeeded'),
    ];
    expect(refundedTotal(events)).toBe(500);
  });

  it('takes a refund’s furthest status whatever order its events arrived in', () => {
    const created = refund('re_1', 300, 'pending');
    const succeeded = refund('re_1', 300, 'succeeded');
    const failed = refund('re_1', 300, 'failed');
    expect(refundedTotal([created, succeeded])).toBe(300);
    expect(refundedTotal([succeeded, created])).toBe(300);
    // Succeeded, then failed (a refund can fail after it succeeded): nothing was refunded.
    expect(refundedTotal([failed, succeeded])).toBe(0);
    expect(refundedTotal([succeeded, failed])).toBe(0);
    expect(refundedTotal([created, failed, succeeded])).toBe(0);
  });

  it('counts a cumulative report as a floor, its largest succeeded one', () => {
    // charge.refunded may not list the refunds it adds up.
    expect(refundedTotal([cumulative(400, 'succeeded'), cumulative(700, 'succeeded')])).toBe(700);
    expect(refundedTotal([cumulative(700, 'succeeded'), cumulative(400, 'succeeded')])).toBe(700);
    expect(refundedTotal([cumulative(700, 'succeeded'), refund('re_1', 300, 'succeeded')])).toBe(
      700,
    );
    // Refunds reported one by one beyond the last cumulative report count in full.
    expect(
      refundedTotal([
        cumulative(300, 'succeeded'),
        refund('re_1', 300, 'succeeded'),
        refund('re_2', 250, 'succeeded'),
      ]),
    ).toBe(550);
  });

  it('does not read a cumulative report as one refund, nor a refund without its ID', () => {
    // A cumulative report that carries an ID (no provider's does) stays a floor: it is not
    // added to the refunds as one of them.
    const report: RecordedRefund = { ...cumulative(300, 'succeeded'), refundId: 're_1' };
    expect(refundedTotal([report, refund('re_2', 200, 'succeeded')])).toBe(300);
    // A failed refund re_1 must not cancel the cumulative report that happens to share its ID.
    expect(refundedTotal([report, refund('re_1', 300, 'failed')])).toBe(300);
    // A refund row without its refund ID cannot be told from another: it counts for nothing.
    expect(refundedTotal([refund(null, 900, 'succeeded')])).toBe(0);
    expect(refundedTotal([refund(null, 900, 'succeeded'), refund('re_1', 100, 'succeeded')])).toBe(
      100,
    );
  });

  it('is the same for any arrival order and duplication of the same events', () => {
    const events = [
      refund('re_1', 300, 'pending'),
      refund('re_1', 300, 'succeeded'),
      refund('re_2', 200, 'succeeded'),
      refund('re_2', 200, 'canceled'),
      refund('re_3', 150, 'succeeded'),
      cumulative(400, 'succeeded'),
    ];
    fc.assert(
      fc.property(
        fc.shuffledSubarray(events, { minLength: events.length, maxLength: events.length }),
        fc.array(fc.nat(events.length - 1), { maxLength: 4 }),
        (order, again) => {
          expect(refundedTotal([...order, ...again.map((i) => order[i]!)])).toBe(450);
        },
      ),
    );
  });
});

describe('disputeOutcome', () => {
  const at = (n: number) => `2026-12-0${n}T00:00:00.000Z`;
  const dispute = (
    disputeId: string,
    status: RecordedDispute['status'],
    day: number,
  ): RecordedDispute => ({ disputeId, status, recordedAt: at(day) });

  it('is none with no dispute, opened while one is open', () => {
    expect(disputeOutcome([])).toEqual({ status: null, closedAt: null });
    expect(disputeOutcome([dispute('dp_1', 'opened', 1)])).toEqual({
      status: 'opened',
      closedAt: null,
    });
    expect(disputeOutcome([dispute('dp_1', 'lost', 1), dispute('dp_2', 'opened', 2)])).toEqual({
      status: 'opened',
      closedAt: null,
    });
  });

  it('closes a dispute whatever order its opening and closure arrived in', () => {
    for (const closure of ['won', 'lost'] as const) {
      const events = [dispute('dp_1', 'opened', 1), dispute('dp_1', closure, 2)];
      const expected = { status: closure, closedAt: at(2) };
      expect(disputeOutcome(events)).toEqual(expected);
      expect(disputeOutcome([...events].reverse())).toEqual(expected);
    }
  });

  it('is lost when any dispute was lost, won when all were, closed at the latest closure', () => {
    const closed = (status: 'won' | 'lost', day: number) => ({ status, closedAt: at(day) });
    expect(disputeOutcome([dispute('dp_1', 'won', 3), dispute('dp_2', 'won', 2)])).toEqual(
      closed('won', 3),
    );
    expect(disputeOutcome([dispute('dp_1', 'won', 2), dispute('dp_2', 'won', 3)])).toEqual(
      closed('won', 3),
    );
    expect(disputeOutcome([dispute('dp_1', 'lost', 2), dispute('dp_2', 'won', 3)])).toEqual(
      closed('lost', 3),
    );
    expect(disputeOutcome([dispute('dp_1', 'won', 4), dispute('dp_2', 'lost', 3)])).toEqual(
      closed('lost', 4),
    );
  });

  it('dates a closure reported twice by its first recording, in either order', () => {
    const first = dispute('dp_1', 'won', 2);
    const again = dispute('dp_1', 'won', 5);
    expect(disputeOutcome([first, again])).toEqual({ status: 'won', closedAt: at(2) });
    expect(disputeOutcome([again, first])).toEqual({ status: 'won', closedAt: at(2) });
  });

  it('counts two different closures of one dispute as lost, whichever came first', () => {
    const won = dispute('dp_1', 'won', 2);
    const lost = dispute('dp_1', 'lost', 3);
    expect(disputeOutcome([won, lost])).toEqual({ status: 'lost', closedAt: at(3) });
    expect(disputeOutcome([lost, won])).toEqual({ status: 'lost', closedAt: at(3) });
  });
});
