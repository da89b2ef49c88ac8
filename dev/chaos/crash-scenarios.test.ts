import { CRASH_POINTS, type CrashPointName } from '../../src/activities/crash-points';
import { SCENARIOS } from './crash-scenarios';
import {
  allPointRuns,
  armName,
  rotatingShare,
  undeclaredArms,
  type PointRun,
} from './crash-matrix';

// The crash matrix's rows, as data (no servers): which point runs under which scenario.
let runs: PointRun[];
beforeAll(async () => {
  runs = await allPointRuns();
});

const rowsOf = (scenario: string) => runs.filter((r) => r.scenario === scenario);

describe('the crash matrix (dev/chaos/crash-scenarios.ts)', () => {
  it('runs every declared point on each of its sides under at least one scenario', () => {
    for (const point of Object.keys(CRASH_POINTS) as CrashPointName[]) {
      const sides = CRASH_POINTS[point].kind === 'reply' ? ['before'] : ['before', 'after'];
      for (const side of sides) {
        expect(runs.filter((r) => r.point === point && r.phase === side).length).toBeGreaterThan(0);
      }
    }
  });

  it('runs a point under every scenario that reaches it, not only the happy path', () => {
    const scenariosOf = (arm: string) =>
      runs.filter((r) => armName(r) === arm).map((r) => r.scenario);
    expect(scenariosOf('recordPayment.commit@after')).toEqual([
      'payment',
      'thin-event',
      'double-charge',
      'refund-before-shipment',
      'warehouse-rejects',
      'warehouse-down',
      'unknown-order',
      'partner-pause',
    ]);
    expect(scenariosOf('applyRefunds.commit@after')).toEqual([
      'payment',
      'thin-event',
      'refund-before-shipment',
      'refund-cancels-shipment',
      'refund-after-shipment',
      'warehouse-rejects',
      'warehouse-down',
      'partner-pause',
    ]);
    expect(scenariosOf('deliverAlert.post@before')).toEqual([
      'double-charge',
      'refund-after-shipment',
      'dispute',
      'warehouse-rejects',
      'warehouse-down',
      'sla',
    ]);
  });

  it('judges a refund after the shipment, a dispute and a thin event at their own points', () => {
    const scenariosOf = (arm: string) =>
      runs.filter((r) => armName(r) === arm).map((r) => r.scenario);
    expect(scenariosOf('requestReturnReview.commit@before')).toEqual(['refund-after-shipment']);
    // The cancel, whether the warehouse takes it or answers already_shipped.
    for (const arm of [
      'cancelShipment.request@after',
      'cancelShipment.reply@before',
      'reverseLoyaltyPoints.reply@before',
    ]) {
      expect(scenariosOf(arm)).toEqual(['refund-cancels-shipment', 'refund-after-shipment']);
    }
    for (const arm of ['handOverRefundToOrder.signal@after', 'recordRefund.commit@before']) {
      expect(scenariosOf(arm)).toEqual([
        'refund-before-shipment',
        'refund-cancels-shipment',
        'refund-after-shipment',
      ]);
    }
    expect(scenariosOf('setShipmentStatus.commit@after')).toContain('refund-cancels-shipment');
    for (const arm of [
      'recordDispute.commit@after',
      'handOverDisputeToOrder.signal@before',
      'applyDisputes.commit@after',
    ]) {
      expect(scenariosOf(arm)).toEqual(['dispute']);
    }
    expect(scenariosOf('fetchThinEventObject.reply@before')).toEqual(['thin-event']);
    expect(scenariosOf('deliverThinEvent.deliver@after')).toEqual(['thin-event']);
  });

  it('judges a payment for an unknown order at the step that keeps it, and only there', () => {
    expect(rowsOf('unknown-order').map(armName)).toEqual([
      'recordPayment.commit@before',
      'recordPayment.commit@after',
      'recordPayment.reply@before',
    ]);
  });

  it('leaves out the sides a failing warehouse never reaches', () => {
    const arms = rowsOf('warehouse-down').map(armName);
    expect(arms).toContain('notifyWarehouse.request@before');
    expect(arms).not.toContain('notifyWarehouse.request@after');
    expect(arms).not.toContain('notifyWarehouse.reply@before');
    expect(rowsOf('payment').map(armName)).toContain('notifyWarehouse.request@after');
  });

  it('reports a point a scenario passes but does not declare', () => {
    expect(
      undeclaredArms('payment', [
        'recordPayment.commit@before',
        'deliverAlert.post@before',
        'deliverAlert.post@before',
      ]),
    ).toEqual(['deliverAlert.post@before']);
    expect(undeclaredArms('warehouse-rejects', ['notifyWarehouse.request@after'])).toEqual([
      'notifyWarehouse.request@after',
    ]);
    expect(undeclaredArms('double-charge', ['requestRefundReview.commit@after'])).toEqual([]);
  });

  it('kills each operator command after each of its declared server calls', () => {
    for (const scenario of ['ops-retry', 'ops-retry-all', 'ops-flush'] as const) {
      const spec = SCENARIOS[scenario];
      expect(rowsOf(scenario).map((r) => r.call)).toEqual(spec.calls.map((_, i) => i + 1));
      expect(rowsOf(scenario).map(armName)).toEqual(spec.calls.map((_, i) => `call-${i + 1}`));
    }
  });

  it('stops every migration between each two of its statements', () => {
    const points = rowsOf('migration').map((r) => r.point);
    expect(points.length).toBeGreaterThan(0);
    expect(points.every((p) => /^\d{4}_\w+#\d+$/.test(p))).toBe(true);
    expect(new Set(points).size).toBe(points.length);
  });

  it('gives each rotation a fixed-size share and comes round to every row', () => {
    const size = 10;
    const rotations = Math.ceil(runs.length / size);
    const seen = new Set<string>();
    for (let rotation = 0; rotation < rotations; rotation++) {
      const share = rotatingShare(runs, size, rotation);
      expect(share).toHaveLength(size);
      for (const run of share) seen.add(`${run.scenario} ${armName(run)} ${run.point}`);
    }
    expect(seen.size).toBe(runs.length);
  });
});
