import { progressLine } from '../../src/cli/batch-report';
import { EXIT_OK, EXIT_PROBLEM } from '../../src/cli/ops';
import type { ExportProgress } from '../../src/shared/export';
import { expectUsageError, runCli } from '../operator/helpers';

// `ops batch`: its command line and its progress bar, without a Temporal server. The environment
// points at a port where nothing listens: a command that wrongly went on to connect ends with 1.
const run = (argv: string[], env: NodeJS.ProcessEnv = { TEMPORAL_ADDRESS: '127.0.0.1:9' }) =>
  runCli(['batch', ...argv], { env });

describe('ops batch command line', () => {
  it('prints its usage for --help', async () => {
    const result = await run(['--help']);
    expect(result.code).toBe(EXIT_OK);
    expect(result.stdout).toContain('start [--from ID] [--to ID]');
    expect(result.stdout).toContain('progress <workflowId | EXPORT_ID> [--watch]');
  });

  it.each([
    [[], 'Usage: npm run ops -- batch'],
    [['export'], 'Unknown command "export"'],
    [['start', '--from', '0'], '--from must be a whole number of 1 or more'],
    [['start', '--to', 'ten'], '--to must be a whole number of 1 or more'],
    [['start', '--from', '20', '--to', '10'], '--from must not be above --to'],
    [['start', '--id', '../etc'], '--id may hold letters, digits'],
    [['start', 'extra'], 'Unexpected argument "extra"'],
    [['progress'], 'Name the export'],
    [['progress', 'x', '--interval', '5'], '--interval must be a whole number of 100 or more'],
    [['progress', 'x', '--bogus'], "Unknown option '--bogus'"],
  ])('%j is a usage error (exit 2, nothing sent)', async (argv, message) => {
    expectUsageError(await run(argv), message);
  });

  it('says where it tried to connect when Temporal is unreachable', async () => {
    const result = await run(['progress', 'some-export']);
    expect(result.code).toBe(EXIT_PROBLEM);
    expect(result.stderr).toContain('Cannot reach Temporal at 127.0.0.1:9');
  });

  it('reports an invalid configuration by variable', async () => {
    const result = await run(['start'], { TEMPORAL_ADDRESS: 'not an address' });
    expect(result.code).toBe(EXIT_PROBLEM);
    expect(result.stderr).toContain('TEMPORAL_ADDRESS: must be host:port');
  });
});

describe('progressLine', () => {
  const base: ExportProgress = {
    exportId: 'x',
    phase: 'exporting',
    total: 100,
    done: 30,
    failedAttempts: 2,
    currentChunk: 31,
    totalOrders: 10_000,
    exportedOrders: 3_000,
    run: 1,
  };

  it('draws a bar of 30 cells with chunks, orders, failed attempts and the current chunk', () => {
    expect(progressLine(base)).toBe(
      `[${'#'.repeat(9)}${'-'.repeat(21)}]  30%  30/100 chunks  3,000/10,000 orders  2 failed attempts  chunk 31  run 1`,
    );
  });

  it('is full once every chunk is done, and says what happens next', () => {
    const line = progressLine({ ...base, done: 100, phase: 'finishing', currentChunk: null });
    expect(line).toMatch(/^\[#{30}\] 100% {2}100\/100 chunks/);
    expect(line).toContain('joining the chunks');
  });

  it('shows an empty bar while the orders are counted', () => {
    expect(progressLine({ ...base, phase: 'planning', total: 0, done: 0 })).toContain(
      `[${'-'.repeat(30)}]    counting`,
    );
  });
});
