import path from 'node:path';
import type { EnvironmentContext, JestEnvironmentConfig } from '@jest/environment';
import type { Circus } from '@jest/types';
import type { LogEntry } from '@temporalio/worker';
import { TestEnvironment } from 'jest-environment-node';

// Jest's node environment, plus: when a test fails, the SDK warnings and errors logged during
// it (kept by quiet-sdk-logs.ts, which prints nothing) are added to its failure, below jest's
// own message. A workflow task failure or a failing activity then explains a timeout right under
// the test's name, instead of scrolling by, among the expected ones, while the tests run.

const SHOWN = 12;
const MAX_LINE = 400;

export default class SdkLogEnvironment extends TestEnvironment {
  private testStartIndex = 0;
  private readonly testFile: string;

  constructor(config: JestEnvironmentConfig, context: EnvironmentContext) {
    super(config, context);
    this.testFile = path.relative(config.globalConfig.rootDir, context.testPath);
  }

  handleTestEvent(event: Circus.Event): void {
    const sdkLogs = this.global as {
      __sdkLogEntries?: LogEntry[];
      __setSdkLogTest?: (label: string) => void;
    };
    const entries = sdkLogs.__sdkLogEntries ?? [];
    if (event.name === 'test_start') {
      this.testStartIndex = entries.length;
      sdkLogs.__setSdkLogTest?.(`${this.testFile} › ${fullName(event.test)}`);
    }
    if (event.name !== 'test_fn_failure' && event.name !== 'hook_failure') return;
    const lines = entries
      .slice(this.testStartIndex)
      .filter((e) => e.level === 'WARN' || e.level === 'ERROR')
      .map((e) => `[sdk ${e.level}] ${e.message} ${meta(e)}`.slice(0, MAX_LINE));
    if (lines.length === 0) return;
    const omitted = lines.length > SHOWN ? `(${lines.length - SHOWN} earlier lines omitted)\n` : '';
    const all = process.env.TEST_LOG_DIR
      ? ` (all of them: ${process.env.TEST_LOG_DIR}/sdk.log)`
      : '';
    const note = `SDK warnings and errors during this test${all}:\n${omitted}${lines.slice(-SHOWN).join('\n')}`;
    if (event.name === 'test_fn_failure' || event.test) {
      const error = new Error(note);
      error.stack = note;
      event.test!.errors.push(error);
    } else if (event.error instanceof Error) {
      // A beforeAll/afterAll failure is reported on each test of its block with this error.
      event.error.stack = `${event.error.stack ?? event.error.message}\n\n${note}`;
    }
  }
}

function fullName(test: Circus.TestEntry): string {
  const names = [test.name];
  for (
    let block = test.parent;
    block && block.name !== 'ROOT_DESCRIBE_BLOCK';
    block = block.parent!
  ) {
    names.unshift(block.name);
  }
  return names.join(' › ');
}

/** The task token is long and useless to a reader. */
function meta(entry: LogEntry): string {
  const { sdkComponent: _component, taskToken: _token, ...rest } = entry.meta ?? {};
  return JSON.stringify(rest, (_key, value: unknown) =>
    typeof value === 'bigint' ? value.toString() : value,
  );
}
