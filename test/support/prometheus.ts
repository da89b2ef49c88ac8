import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { provisionPrometheus, type PrometheusTools } from '../../harness/prometheus/provision';
import { eventually } from './eventually';
import { freePort } from '../../harness/ports';

/** promtool and prometheus, as the global setup found them (PROMETHEUS_BIN_DIR). */
export function prometheusTools(): Promise<PrometheusTools> {
  return provisionPrometheus();
}

/** Runs a program to its end: exit code and everything it printed. */
export function runTool(
  command: string,
  args: string[],
  options: { cwd?: string } = {},
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/** A Prometheus server of the test's own, scraping the given jobs every second. */
export interface PrometheusServer {
  url: string;
  /** The series a PromQL expression returns over a time range, one sample a second. */
  queryRange(expr: string, startMs: number, endMs: number): Promise<RangeSeries[]>;
  /** GET of an API path (`/api/v1/...`): its `data`, or the error Prometheus gave. */
  api<T>(pathAndQuery: string): Promise<T>;
  stop(): Promise<void>;
}

export interface RangeSeries {
  metric: Record<string, string>;
  values: Array<[number, string]>;
}

export async function startPrometheus(options: {
  jobs: Record<string, string[]>;
  ruleFiles?: string[];
}): Promise<PrometheusServer> {
  const { prometheus } = await prometheusTools();
  const dir = await mkdtemp(path.join(tmpdir(), 'order-payments-prometheus-'));
  const port = await freePort();
  const config = {
    global: { scrape_interval: '1s', evaluation_interval: '1s' },
    rule_files: options.ruleFiles ?? [],
    scrape_configs: Object.entries(options.jobs).map(([job, targets]) => ({
      job_name: job,
      static_configs: [{ targets }],
    })),
  };
  // JSON is YAML: no YAML writer needed.
  await writeFile(path.join(dir, 'prometheus.yml'), JSON.stringify(config));
  const child = spawn(
    prometheus,
    [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited:\n${output}`);
        expect((await fetch(`${url}/-/ready`)).status).toBe(200);
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const api = async <T>(pathAndQuery: string): Promise<T> => {
    const response = await fetch(`${url}${pathAndQuery}`);
    const body = (await response.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`${pathAndQuery}: ${body.error}`);
    return body.data;
  };
  return {
    url,
    api,
    async queryRange(expr, startMs, endMs) {
      const params = new URLSearchParams({
        query: expr,
        start: String(startMs / 1000),
        end: String(endMs / 1000),
        step: '1',
      });
      const data = await api<{ result: RangeSeries[] }>(`/api/v1/query_range?${params.toString()}`);
      return data.result;
    },
    stop,
  };
}
