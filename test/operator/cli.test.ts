import { EXIT_OK, EXIT_PROBLEM, type CliIo } from '../../src/cli/ops';
import { formatTable } from '../../src/operator/table';
import { expectUsageError, runCli } from './helpers';

// The CLI's command line, without a Temporal server: every usage error must be reported with
// exit code 2 before any connection is tried. The environment points at a port where nothing
// listens, so a command that wrongly went on to connect would end with 1 instead.
const unreachable = { TEMPORAL_ADDRESS: '127.0.0.1:9' };

const run = (argv: string[], overrides: Partial<CliIo> = {}) =>
  runCli(argv, { env: unreachable, ...overrides });

describe('ops help', () => {
  it('prints the commands for --help, -h and help, with exit code 0', async () => {
    for (const argv of [['--help'], ['-h'], ['help']]) {
      const result = await run(argv);
      expect(result.code).toBe(EXIT_OK);
      expect(result.stdout).toContain('Commands:');
      for (const command of ['failed', 'retry', 'flush', 'stuck']) {
        expect(result.stdout).toContain(`  ${command} `);
      }
      expect(result.stdout).toContain('npm run ops -- settle --help');
    }
  });

  it('prints one command help for "<command> --help" and "help <command>"', async () => {
    const viaFlag = await run(['flush', '--help']);
    const viaHelp = await run(['help', 'flush']);
    expect(viaFlag).toMatchObject({ code: EXIT_OK, stderr: '' });
    expect(viaFlag.stdout).toBe(viaHelp.stdout);
    expect(viaFlag.stdout).toContain('the server forgets the workflow ID');
    expect((await run(['retry', '-h'])).stdout).toContain('npm run ops -- retry all');
    expect((await run(['stuck', '--help'])).stdout).toContain('--min-attempts');
  });

  it('lists every group of the one program, and shows a group help the three ways', async () => {
    const top = await run(['--help']);
    for (const group of ['unmatched', 'partner', 'deployment', 'batch']) {
      expect(top.stdout).toContain(`  ${group} <command>`);
    }
    expect(top.stdout).toContain('  doctor [--backlog-warn <N>]');
    const viaFlag = await run(['deployment', '--help']);
    expect(viaFlag).toMatchObject({ code: EXIT_OK, stderr: '' });
    expect(viaFlag.stdout).toContain('Usage: npm run ops -- deployment <command>');
    expect(viaFlag.stdout).toContain('drain <build-id>');
    expect((await run(['help', 'deployment'])).stdout).toBe(viaFlag.stdout);
    const leaf = await run(['deployment', 'help', 'drain']);
    expect(leaf.stdout).toContain('Usage: npm run ops -- deployment drain <build-id>');
    expect((await run(['deployment', 'drain', '--help'])).stdout).toBe(leaf.stdout);
  });
});

describe('ops usage errors (exit 2, nothing sent)', () => {
  it.each([
    [[], 'Usage: npm run ops'],
    [['nope'], 'Unknown command "nope"'],
    [['failed', '--limit', '0'], '--limit must be a whole number of 1 or more'],
    [['failed', '--limit', 'ten'], '--limit must be a whole number'],
    [['failed', '--bogus'], "Unknown option '--bogus'"],
    [['failed', 'extra'], 'Unexpected argument "extra"'],
    [['failed', '--type'], "Option '-t, --type <value>' argument missing"],
    [['retry'], 'Name the workflow to retry, or "all"'],
    [['retry', 'payment-a', 'payment-b'], 'Unexpected argument "payment-b"'],
    [['retry', 'payment-a', '--type', 'paymentWorkflow'], '--type filters "retry all"'],
    [['retry', 'payment-a', '--dry-run'], '--dry-run filters "retry all"'],
    [['retry', 'all', '--since', 'yesterday'], '--since takes an age (90s, 30m, 2h, 1d)'],
    [['retry', 'all', '--rate', '0'], '--rate must be a whole number of 1 or more'],
    [['retry', 'all', '--wait', '-1'], '--wait must be a whole number of 0 or more'],
    [['stuck', '--min-attempts', '-1'], '--min-attempts must be a whole number of 1 or more'],
    [['stuck', '--min-attempts=-1'], '--min-attempts must be a whole number'],
    [['stuck', '--min-attempts', '2.5'], '--min-attempts must be a whole number'],
    [['flush'], 'without a terminal to confirm on, pass --yes'],
    [['settle'], "Missing required argument 'orderId'"],
    [['settle', '12'], 'Say why: --reason <text>'],
    [['settle', '12', '--reason', '  '], 'Say why: --reason <text>'],
    [['settle', '0', '--reason', 'x'], 'The order ID must be a whole number of 1 or more'],
    [['settle', '12', '--reason', 'x', 'extra'], 'Unexpected argument "extra"'],
    [['settle', '12', '--reason', 'x'.repeat(501)], 'keep it to 500'],
    [['settle', '12', '--reason', 'x', '--by', ' '], '--by names who decided'],
    [['deployment'], 'Usage: npm run ops -- deployment <command>'],
    [['deployment', 'nope'], 'Unknown command "nope"'],
    [['deployment', '--bogus'], "Unknown option '--bogus'"],
    [['deployment', 'current'], 'Name the build to make current'],
    [['deployment', 'ramp', 'b1', '0'], 'Give the build and a share of new runs'],
    [['deployment', 'ramp', 'b1', '101'], 'Give the build and a share of new runs'],
    [['deployment', 'drain', 'b1', 'b2'], 'Unexpected argument "b2"'],
    [['doctor', 'extra'], 'Unexpected argument "extra"'],
    [['doctor', '--backlog-warn', 'ten'], '--backlog-warn must be a whole number of 0 or more'],
    [['partner', 'pause', 'nobody'], 'Unknown partner "nobody"'],
  ])('%j', async (argv, message) => {
    expectUsageError(await run(argv), message);
  });
});

describe('ops problems (exit 1)', () => {
  it('reports an invalid configuration by variable', async () => {
    const result = await run(['failed'], { env: { TEMPORAL_ADDRESS: 'not an address' } });
    expect(result.code).toBe(EXIT_PROBLEM);
    expect(result.stderr).toContain('TEMPORAL_ADDRESS: must be host:port');
  });

  it('says where it tried to connect when Temporal is unreachable', async () => {
    for (const argv of [['failed'], ['deployment', 'describe']]) {
      const result = await run(argv);
      expect(result.code).toBe(EXIT_PROBLEM);
      expect(result.stderr).toContain('Cannot reach Temporal at 127.0.0.1:9');
      expect(result.stdout).toBe('');
    }
  });
});

describe('formatTable', () => {
  it('aligns columns, cuts long cells and keeps each row on one line', () => {
    const table = formatTable(
      [{ header: 'ID' }, { header: 'MESSAGE', maxWidth: 10 }, { header: 'AT' }],
      [
        ['a', 'short', '1'],
        ['longer-id', 'a message that is\ntoo long', '2'],
      ],
    );
    expect(table.split('\n')).toEqual([
      'ID         MESSAGE     AT',
      'a          short       1',
      'longer-id  a message…  2',
    ]);
  });
});
