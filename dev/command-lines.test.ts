import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

// Every npm script of dev/ and bench/ reads its command line with the operator program's parser
// (src/cli/command-line.ts, issue 28): `--help` prints the usage and exits 0, an unknown option
// is refused with exit 2 before anything starts. Run as npm runs them, from package.json.

const ROOT = path.resolve(__dirname, '..');
const scripts = (
  JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  }
).scripts;

const TOOLS = [
  'start',
  'demo',
  'provision',
  'simulate',
  'docs:config',
  'chaos',
  'crash-points',
  'cluster',
  'record-histories',
  'migrate',
  'worker',
  'http',
  'heavy-worker',
  'test:stress',
  ...Object.keys(scripts).filter((name) => /^bench(:|$)/.test(name)),
];

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runScript(name: string, args: string[]): Promise<Ran> {
  const [node, ...rest] = scripts[name]!.split(' ');
  expect(node).toBe('node');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...rest, ...args], {
      cwd: ROOT,
      // npm's own variable: the benchmarks name the script they were started as.
      env: { ...process.env, npm_lifecycle_event: name },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // A tool that ignored its command line would start its work: stopped, and the test fails.
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const usageOf = (name: string) => (name === 'start' ? 'npm start --' : `npm run ${name} --`);

it('lists the tools this test covers among the npm scripts', () => {
  for (const name of TOOLS) expect(scripts[name]).toMatch(/^node --import tsx (dev|bench|src)\//);
  expect(TOOLS.filter((name) => name.startsWith('bench'))).toHaveLength(8);
});

// Spawning a tool costs seconds (tsx, its imports): --help of each; the refusal is the shared
// parser's, so three tools (options only, positional arguments, a benchmark) show it.
it.each(TOOLS)(
  'npm run %s prints its usage on --help, exit 0',
  async (name) => {
    const ran = await runScript(name, ['--help']);
    expect(ran).toMatchObject({ code: 0, stderr: '' });
    expect(ran.stdout).toMatch(new RegExp(`^Usage: ${escape(usageOf(name))} `));
    expect(ran.stdout).toContain('-h, --help');
  },
  60_000,
);

it.each(['start', 'simulate', 'bench:e2e'])(
  'npm run %s refuses an unknown option with exit 2 and the usage, before it starts anything',
  async (name) => {
    const ran = await runScript(name, ['--no-such-flag']);
    expect(ran).toMatchObject({ code: 2, stdout: '' });
    expect(ran.stderr).toMatch(/^Unknown option '--no-such-flag'\.\n\nUsage: /);
  },
  60_000,
);

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
