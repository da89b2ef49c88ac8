import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

const root = resolve(__dirname, '../..');

// The drift check: docs/configuration.md is what `npm run docs:config` writes from src/config/.
// It runs the script itself (as CI would) rather than importing dev/ into the tests.
describe('docs/configuration.md', () => {
  it('is what `npm run docs:config` writes from the configuration slices', () => {
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'dev/config-reference.ts', '--check'],
      {
        cwd: root,
        encoding: 'utf8',
      },
    );
    // The script's message names the command that fixes the drift.
    expect({ status: run.status, stderr: run.stderr.trim() }).toEqual({ status: 0, stderr: '' });
  });
});
