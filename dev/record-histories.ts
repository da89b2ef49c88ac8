import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { historyToJson, type ManifestEntry } from '../harness/histories';
import { createTool, parseTool, UsageError } from '../src/cli/command-line';
import { scenarios } from './record-histories/scenarios';
import { withRecordingStack } from './record-histories/stack';
import type { Run } from './record-histories/steps';

/**
 * `npm run record-histories -- <set>`: runs representative scenarios through the real payment
 * worker (dev server, SQLite temp database, warehouse simulator, SMTP sink, alert sink) and
 * writes every workflow's history to test/replay/histories/<set>/<scenario>-<workflowType>.json,
 * plus a manifest with the workflow IDs, which histories do not contain and which the workflows
 * use (the failure alert's workflow ID is derived from the failed run's). test/replay replays
 * every committed set against the current code. See docs/deploys.md for when to record a set.
 */

const HISTORIES_DIR = path.resolve(__dirname, '..', 'test', 'replay', 'histories');
/**
 * Each scenario takes seconds (warehouse-retried: its 10 s and 30 s waits); past this something
 * hangs (e.g. an unregistered attribute).
 */
const SCENARIO_TIMEOUT_MS = 120_000;

const commandLine = createTool(
  'npm run record-histories --',
  'Records the replay histories of the current workflow code into test/replay/histories/<set>/ ' +
    '(docs/deploys.md says when).',
)
  .usage('<set> [--force]')
  .argument('<set>', 'the name of the set, e.g. v3 (letters, digits, ".", "_", "-")')
  .option('--force', 'replace an existing set');

async function main(argv: string[]): Promise<number> {
  const line = await parseTool(
    commandLine,
    ([set], options) => {
      if (!set || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(set))
        throw new UsageError(`"${set}" is not a set name: letters, digits, ".", "_" and "-".`);
      return { set, force: options.force === true };
    },
    argv,
  );
  if (line.kind === 'exit') return line.code;
  const { set, force } = line.work;
  const outDir = path.join(HISTORIES_DIR, set);
  const existing = await readdir(outDir).catch(() => [] as string[]);
  if (existing.length > 0 && !force) {
    process.stderr.write(
      `${path.relative(process.cwd(), outDir)} already holds histories. Committed histories are ` +
        'what running workflows look like: record a new set under another name, or pass --force.\n',
    );
    return 1;
  }

  // Warnings and errors only: the failure scenarios log their (expected) failures.
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry) =>
      process.stderr.write(`  [sdk ${entry.level.toLowerCase()}] ${entry.message}\n`),
    ),
    shutdownSignals: [],
  });

  process.stdout.write('Starting a dev server, a SQLite database and the local peers…\n');
  const entries = await withRecordingStack(async (stack) => {
    const recorded: Array<ManifestEntry & { history: string }> = [];
    for (const scenario of scenarios) {
      process.stdout.write(`Scenario ${scenario.name}: ${scenario.what}\n`);
      const runs = await withTimeout(scenario.run(stack), SCENARIO_TIMEOUT_MS, scenario.name);
      for (const run of runs) recorded.push(await fetchHistory(stack.client, scenario.name, run));
    }
    return recorded;
  });

  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  for (const entry of entries) {
    await writeFile(path.join(outDir, entry.file), `${entry.history}\n`);
    process.stdout.write(`  wrote ${path.relative(process.cwd(), outDir)}/${entry.file}\n`);
  }
  const manifest = entries.map(({ history: _history, ...entry }) => entry);
  await writeFile(path.join(outDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  process.stdout.write(
    `Recorded ${entries.length} histories. Run \`npx jest test/replay\`, then commit ` +
      `${path.relative(process.cwd(), outDir)}.\n`,
  );
  return 0;
}

async function fetchHistory(
  client: Client,
  scenario: string,
  run: Run,
): Promise<ManifestEntry & { history: string }> {
  const handle = client.workflow.getHandle(run.workflowId, run.runId);
  const history = await handle.fetchHistory();
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  const workflowType = started?.workflowType?.name;
  if (!workflowType) throw new Error(`${run.workflowId}: history does not start the workflow`);
  return {
    file: `${scenario}-${workflowType}.json`,
    scenario,
    workflowType,
    workflowId: run.workflowId,
    runId: run.runId,
    history: historyToJson(history),
  };
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`scenario ${what} took over ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `record-histories failed: ${err instanceof Error ? err.stack : String(err)}\n`,
    );
    process.exit(1);
  },
);
