import fs from 'node:fs/promises';
import path from 'node:path';
import { PROMETHEUS_BIN_DIR_ENV, provisionPrometheus } from '../../harness/prometheus/provision';
import { defaultContext } from '../../harness/temporal/provision';
import { tempDirsForTests } from '../support/temp-dirs';

// Where promtool and prometheus come from: Debian's package, unpacked into a cache once, or a
// folder named by PROMETHEUS_BIN_DIR.

const tempDir = tempDirsForTests('prometheus-provision-');

function withoutOverride(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env[PROMETHEUS_BIN_DIR_ENV];
  return env;
}

describe('provisioning Prometheus', () => {
  it("unpacks Debian's package into an empty cache once, then reuses it", async () => {
    const cacheDir = await tempDir();
    const lines: string[] = [];
    const context = defaultContext({ cacheDir, env: withoutOverride(), log: (l) => lines.push(l) });

    const first = await provisionPrometheus({ context });
    expect(first.version).toMatch(/^promtool, version \d+\.\d+\.\d+/);
    expect(path.dirname(first.binDir)).toMatch(new RegExp(`^${cacheDir}/prometheus-debian-`));
    // Only the two programs are kept, not the package's web assets or the .deb.
    expect((await fs.readdir(path.dirname(first.binDir))).sort()).toEqual(['bin']);
    expect((await fs.readdir(first.binDir)).sort()).toEqual(['prometheus', 'promtool']);
    expect(lines.some((l) => l.startsWith('Building Prometheus and promtool'))).toBe(true);

    lines.length = 0;
    const again = await provisionPrometheus({ context });
    expect(again.binDir).toBe(first.binDir);
    expect(lines).toEqual([]);
  }, 120_000);

  it('takes the folder PROMETHEUS_BIN_DIR names, and says what is wrong with one that lacks them', async () => {
    const cached = await provisionPrometheus({
      context: defaultContext({ env: withoutOverride() }),
    });
    const env = { ...withoutOverride(), [PROMETHEUS_BIN_DIR_ENV]: cached.binDir };
    expect((await provisionPrometheus({ context: defaultContext({ env }) })).binDir).toBe(
      cached.binDir,
    );

    const empty = await tempDir();
    await expect(
      provisionPrometheus({
        context: defaultContext({ env: { ...env, [PROMETHEUS_BIN_DIR_ENV]: empty } }),
      }),
    ).rejects.toThrow(
      `PROMETHEUS_BIN_DIR is set to ${empty}, which holds no executable prometheus`,
    );
  });
});
