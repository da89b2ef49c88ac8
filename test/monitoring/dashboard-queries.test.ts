import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PAYMENT_TO_SHIPMENT_BUCKETS_SECONDS } from '../../src/shared/business-metrics';
import { eventually } from '../support/eventually';
import { ROOT, run, startStack, stopDevStacks, type Stack } from '../support/dev-stack';
import { startPrometheus, type PrometheusServer } from '../support/prometheus';

// The Grafana dashboard against a real run: `npm start` (dev server, the workers with their SDK
// metrics endpoint, the HTTP process with its admin /metrics), a real Prometheus scraping both
// every second with the shipped alert rules loaded, payments played by `npm run demo`, one that
// waits out a warehouse 503 and one the warehouse rejects (a compensated order). Then every
// query of every panel is asked of Prometheus over the run, as Grafana would: each must return
// a series with a number in it, so a misspelt metric, label or panel expression fails here.

const DASHBOARD = path.join(ROOT, 'deploy/grafana/order-payments.json');
const RULES = path.join(ROOT, 'deploy/prometheus/rules.yml');

// Metrics the alert rules watch that a healthy run does not produce: they appear when it happens.
const ONLY_WHEN_IT_HAPPENS = new Set([
  'temporal_workflow_task_execution_failed',
  'temporal_request_failure',
]);

// Grafana's interval for rate(): Prometheus scrapes every second here, so a minute is plenty.
const GRAFANA_VARIABLES: Record<string, string> = { $__rate_interval: '1m' };

interface Panel {
  type: string;
  title: string;
  targets?: Array<{ expr: string; refId: string }>;
}

const panels = (JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] }).panels.filter(
  (p) => p.type !== 'row',
);

let stack: Stack | undefined;
let prometheus: PrometheusServer | undefined;

afterAll(async () => {
  await prometheus?.stop();
  await stopDevStacks();
});

/** Switches the stack's warehouse simulator for its next `times` requests. */
async function warehouseMode(mode: object, times: number) {
  const response = await fetch(`http://127.0.0.1:${stack!.ports[3]}/_simulator/mode`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ mode, times }),
  });
  expect(response.status).toBe(200);
}

/** One `npm run demo`: an order, its payment as the provider delivers it, and its outcome. */
async function demo(waitSeconds: number) {
  const played = await run(process.execPath, ['--import', 'tsx', 'dev/demo.ts'], {
    ...stack!.env,
    DEMO_WAIT_SECONDS: String(waitSeconds),
  });
  expect(played.code).toBe(0);
  return played.output;
}

function substituted(expr: string): string {
  const out = expr.replace(/\$__\w+/g, (name) => {
    const value = GRAFANA_VARIABLES[name];
    if (value === undefined) throw new Error(`no value for ${name} in ${expr}`);
    return value;
  });
  expect(out).not.toContain('$');
  return out;
}

describe('the Grafana dashboard', () => {
  it('has queries on every panel', () => {
    expect(panels.length).toBeGreaterThan(10);
    for (const panel of panels)
      expect([panel.title, panel.targets?.length ?? 0]).not.toEqual([panel.title, 0]);
  });

  it('shows data on every panel from the real endpoints during a run', async () => {
    stack = await startStack(false);
    const [, , , , , workerMetrics, admin] = stack.ports;
    prometheus = await startPrometheus({
      jobs: {
        'order-payments-http': [`127.0.0.1:${admin}`],
        'order-payments-worker': [`127.0.0.1:${workerMetrics}`],
      },
      ruleFiles: [RULES],
    });
    const startedAt = Date.now();

    expect(await demo(30)).toMatch(/shipment_status=requested/);
    await warehouseMode({ kind: 'unavailable', status: 503 }, 1);
    // The server retries the warehouse after 10 s: shipped on the second attempt.
    expect(await demo(40)).toMatch(/shipment_status=requested/);
    await warehouseMode({ kind: 'reject', status: 400 }, 1);
    await demo(10);
    expect(await demo(30)).toMatch(/shipment_status=requested/);

    // The compensated order has reached Prometheus, and a few more scrapes.
    await eventually(
      async () => {
        const series = await prometheus!.queryRange(
          'order_payments_compensations_total',
          Date.now() - 5_000,
          Date.now(),
        );
        expect(series).toEqual([
          expect.objectContaining({
            metric: expect.objectContaining({
              cause: 'WarehouseRejected',
              reason: 'non_retryable',
              job: 'order-payments-worker',
            }),
          }),
        ]);
      },
      { timeoutMs: 30_000, intervalMs: 1_000 },
    );
    // In seconds, on the buckets the runtime sets for it (the SDK's defaults suit milliseconds).
    const scraped = await (await fetch(`http://127.0.0.1:${workerMetrics}/metrics`)).text();
    const buckets = [
      ...scraped.matchAll(/^order_payments_payment_to_shipment_seconds_bucket\{.*le="([^"]+)"/gm),
    ].map((m) => m[1]);
    expect(buckets).toEqual([...PAYMENT_TO_SHIPMENT_BUCKETS_SECONDS.map(String), '+Inf']);
    const endedAt = Date.now() + 3_000;
    await new Promise((resolve) => setTimeout(resolve, 3_000));

    // The shipped rules loaded in the server too.
    const rules = await prometheus.api<{ groups: Array<{ name: string; rules: unknown[] }> }>(
      '/api/v1/rules',
    );
    expect(rules.groups.map((g) => g.name)).toEqual(['order-payments']);
    // …and watch metrics the processes really export, under those names.
    const exported = new Set(await prometheus.api<string[]>('/api/v1/label/__name__/values'));
    const watched = new Set(
      readFileSync(RULES, 'utf8').match(/\b(?:order_payments|temporal)_\w+/g),
    );
    expect(watched.size).toBeGreaterThan(8);
    expect(
      [...watched].filter((name) => !ONLY_WHEN_IT_HAPPENS.has(name) && !exported.has(name)),
    ).toEqual([]);

    const withoutData: string[] = [];
    for (const panel of panels) {
      for (const target of panel.targets ?? []) {
        const series = await prometheus.queryRange(substituted(target.expr), startedAt, endedAt);
        const numbers = series.flatMap((s) => s.values.map(([, v]) => Number(v)));
        if (!numbers.some((n) => Number.isFinite(n))) {
          withoutData.push(`${panel.title} [${target.refId}]: ${target.expr}`);
        }
      }
    }
    expect(withoutData).toEqual([]);
  }, 300_000);
});
