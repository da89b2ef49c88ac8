import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ensureCached, runOrExplain, tail, type ProvisionContext } from '../provision/cache';
import { defaultContext } from '../temporal/provision';

/**
 * Prometheus and promtool, for the alert rules' tests (`promtool test rules`) and the
 * dashboard's end-to-end test (a real Prometheus scraping the processes). Nothing is installed
 * on the system and no service is started: Debian's `prometheus` package is downloaded with
 * `apt-get download` and unpacked with `dpkg -x` into the cache the Temporal servers use, once
 * (about two seconds). Both programs are static Go binaries. A `go install` of promtool from the
 * Go module proxy would also work, but is a build of minutes on two cores and brings no server.
 *
 * PROMETHEUS_BIN_DIR names a folder holding both instead (an installed distribution package,
 * /usr/bin, or an official release unpacked).
 */

export const PROMETHEUS_BIN_DIR_ENV = 'PROMETHEUS_BIN_DIR';
const DEBIAN_PACKAGE = 'prometheus';
const PROGRAMS = ['prometheus', 'promtool'] as const;

export interface PrometheusTools {
  binDir: string;
  prometheus: string;
  promtool: string;
  /** `promtool --version`'s first line. */
  version: string;
}

// The lists apt reads are not there on a fresh machine until `apt-get update` has run.
const NO_CANDIDATE = /unable to locate package|has no installation candidate|no candidate/i;

/** Where promtool and prometheus are: PROMETHEUS_BIN_DIR, or Debian's package, unpacked once. */
export async function provisionPrometheus(
  opts: { log?: (line: string) => void; context?: ProvisionContext } = {},
): Promise<PrometheusTools> {
  const context =
    opts.context ??
    defaultContext({
      log: opts.log ?? ((line) => process.stderr.write(`[prometheus] ${line}\n`)),
    });
  const fromEnv = context.env[PROMETHEUS_BIN_DIR_ENV];
  const binDir = fromEnv
    ? await checkedBinDir(fromEnv)
    : path.join(await ensureDebianPrometheus(context), 'bin');
  const tools = {
    binDir,
    prometheus: path.join(binDir, 'prometheus'),
    promtool: path.join(binDir, 'promtool'),
  };
  const version = await context.run(tools.promtool, ['--version'], {
    cwd: binDir,
    env: context.env,
  });
  if (version.code !== 0) {
    throw new Error(`${tools.promtool} --version failed:\n${tail(version.output)}`);
  }
  return { ...tools, version: version.output.trim().split('\n')[0] ?? '' };
}

async function checkedBinDir(dir: string): Promise<string> {
  for (const program of PROGRAMS) {
    try {
      await fs.access(path.join(dir, program), fsConstants.X_OK);
    } catch {
      throw new Error(
        `${PROMETHEUS_BIN_DIR_ENV} is set to ${dir}, which holds no executable ${program}; fix or unset it.`,
      );
    }
  }
  return path.resolve(dir);
}

async function ensureDebianPrometheus(context: ProvisionContext): Promise<string> {
  return ensureCached(context, {
    name: 'prometheus-debian',
    recipe: [`apt-get download ${DEBIAN_PACKAGE}`, 'dpkg -x', ...PROGRAMS],
    label: "Prometheus and promtool from Debian's package",
    expected: 'a few seconds',
    build: async (outDir, onLine) => {
      const options = { cwd: outDir, env: context.env, onLine };
      let download = await runOrExplain(
        context,
        'apt-get',
        ['download', DEBIAN_PACKAGE],
        options,
        "Debian's apt (or set PROMETHEUS_BIN_DIR to a folder with prometheus and promtool)",
      );
      if (download.code !== 0 && NO_CANDIDATE.test(download.output) && isRoot()) {
        context.log('apt has no package lists yet: running apt-get update once');
        const update = await context.run('apt-get', ['update', '-qq'], options);
        if (update.code !== 0) {
          throw new Error(`apt-get update failed:\n${tail(update.output)}`);
        }
        download = await context.run('apt-get', ['download', DEBIAN_PACKAGE], options);
      }
      if (download.code !== 0) {
        throw new Error(
          `apt-get download ${DEBIAN_PACKAGE} failed${isRoot() ? '' : ' (as root, `apt-get update` first may help)'}:\n${tail(download.output)}`,
        );
      }
      const deb = (await fs.readdir(outDir)).find(
        (file) => file.startsWith(`${DEBIAN_PACKAGE}_`) && file.endsWith('.deb'),
      );
      if (!deb) throw new Error(`apt-get download left no ${DEBIAN_PACKAGE}_*.deb`);
      const unpacked = path.join(outDir, 'package');
      const extract = await runOrExplain(
        context,
        'dpkg',
        ['-x', deb, unpacked],
        options,
        "Debian's dpkg",
      );
      if (extract.code !== 0) throw new Error(`dpkg -x failed:\n${tail(extract.output)}`);
      const bin = path.join(outDir, 'bin');
      await fs.mkdir(bin);
      for (const program of PROGRAMS) {
        await fs.rename(path.join(unpacked, 'usr', 'bin', program), path.join(bin, program));
      }
      // The package's web assets, init scripts and documentation are not needed.
      await fs.rm(unpacked, { recursive: true, force: true });
      await fs.rm(path.join(outDir, deb), { force: true });
      for (const program of PROGRAMS) {
        const ran = await context.run(path.join(bin, program), ['--version'], options);
        if (ran.code !== 0) {
          throw new Error(`the unpacked ${program} does not run:\n${tail(ran.output)}`);
        }
      }
    },
  });
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}
