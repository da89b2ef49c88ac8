import { readFileSync } from 'node:fs';
import path from 'node:path';
import { prometheusTools, runTool } from '../support/prometheus';

// The shipped alerting rules (deploy/prometheus/rules.yml) load in Prometheus, and pass their
// unit tests (rules.test.yml) under promtool; and every rule has a test in which it fires and,
// later in the same series, resolves.

const DIR = path.resolve(__dirname, '../../deploy/prometheus');
const RULES = path.join(DIR, 'rules.yml');
const RULE_TESTS = path.join(DIR, 'rules.test.yml');

describe('Prometheus alerting rules', () => {
  it('are valid rules for promtool, loaded by the example scrape configuration', async () => {
    const { promtool } = await prometheusTools();
    const checked = await runTool(promtool, ['check', 'config', path.join(DIR, 'prometheus.yml')]);
    expect(checked.output).toMatch(/SUCCESS: \d+ rules found/);
    expect(checked.code).toBe(0);
  });

  it('pass their promtool unit tests', async () => {
    const { promtool } = await prometheusTools();
    const tested = await runTool(promtool, ['test', 'rules', RULE_TESTS]);
    expect(tested.output).not.toContain('FAILED');
    expect(tested.code).toBe(0);
  });

  it('each fire, then resolve, in one of those tests', () => {
    const alerts = [...readFileSync(RULES, 'utf8').matchAll(/^\s+- alert: (\w+)$/gm)].map(
      (m) => m[1]!,
    );
    expect(alerts.length).toBeGreaterThan(10);
    const cases = ruleTestCases(readFileSync(RULE_TESTS, 'utf8'));
    const firesThenResolves = (alert: string) =>
      cases.some((checks) => {
        const mine = checks.filter((c) => c.alertname === alert);
        return mine.some(
          (fired) => fired.firing && mine.some((r) => !r.firing && r.minutes > fired.minutes),
        );
      });
    expect(alerts.filter((alert) => !firesThenResolves(alert))).toEqual([]);
  });
});

interface Check {
  alertname: string;
  minutes: number;
  firing: boolean;
}

/**
 * The alert checks of each test case in rules.test.yml, read from its Prettier-formatted YAML:
 * one-line `{ eval_time, alertname, exp_alerts: [] }` items expect nothing, block items list
 * the alerts they expect. (No YAML parser is among the project's dependencies.)
 */
function ruleTestCases(yaml: string): Check[][] {
  return yaml
    .split(/^ {2}- name: /m)
    .slice(1)
    .map((testCase) =>
      testCase
        .split(/^ {6}- /m)
        .slice(1)
        .flatMap((item): Check[] => {
          const alertname = /alertname: (\w+)/.exec(item)?.[1];
          const time = /eval_time: (\d+)(m|h)/.exec(item);
          if (!alertname || !time) return [];
          const minutes = Number(time[1]) * (time[2] === 'h' ? 60 : 1);
          return [{ alertname, minutes, firing: !/exp_alerts: \[\]/.test(item) }];
        }),
    );
}
