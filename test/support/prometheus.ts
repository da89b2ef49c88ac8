import { spawn } from 'node:child_process';
import { provisionPrometheus, type PrometheusTools } from '../../dev/prometheus/provision';

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
