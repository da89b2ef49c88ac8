import { hostname, userInfo } from 'node:os';
import type { Client } from '@temporalio/client';
import { loadConfig } from '../config';
import { runMain } from '../process/run-main';
import {
  describeDeployment,
  openRunsOn,
  setCurrentBuild,
  setRampingBuild,
  type DeploymentState,
} from '../temporal/deployments';
import { addCommand, atMost, createProgram, parseCommandLine, UsageError } from './command-line';
import { DEFAULT_TEMPORAL_ADDRESS, withTemporalClient } from './temporal-session';

/**
 * `npm run deployment -- <command>`: a rollout with Worker Versioning (docs/deploys.md). The
 * builds of WORKER_DEPLOYMENT_NAME, which one takes new runs, a ramp, and the drain check that
 * says when an old build's workers may stop. The same operations as `temporal worker deployment
 * describe / set-current-version / set-ramping-version`, plus the count of open runs per build.
 */

export interface DeploymentIo {
  out(text: string): void;
  err(text: string): void;
  env?: NodeJS.ProcessEnv;
}

type Work = (client: Client, deploymentName: string) => Promise<number>;

const EXIT_OPEN_RUNS = 1;

function commandLine(io: DeploymentIo) {
  const program = createProgram(
    'npm run deployment --',
    'Roll a build of the workers out, ramp it, roll it back, and see which builds still have open runs.',
  ).addHelpText(
    'after',
    `
A build is what one worker image runs: WORKER_DEPLOYMENT_NAME (default order-payments) and its
build ID (the workflow bundle's hash, or WORKER_BUILD_ID), printed by npm run build and in the
worker's "worker started" log line. Start its workers first: the server knows a build once a
worker of it has polled, and refuses to make current a build that lacks a task queue the
current one has (start its heavy worker too).

Connects to TEMPORAL_ADDRESS (unset: ${DEFAULT_TEMPORAL_ADDRESS}) in TEMPORAL_NAMESPACE.
Exit codes: 0 done, 1 refused or failed (drain: runs still open), 2 wrong command line.`,
  );

  addCommand<Work>(program, 'describe', '', (args) => {
    atMost(args, 0);
    return (client, name) => describeCommand(client, name, io);
  }).summary('the current build, the ramp, and every build with its open runs');

  addCommand<Work>(program, 'current', '<build-id>', (args) => {
    const [buildId] = atMost(args, 1);
    if (!buildId) throw new UsageError('Name the build to make current.');
    return async (client, deploymentName) => {
      await setCurrentBuild(client, { deploymentName, buildId }, { identity: identity() });
      io.out(`${buildId} is current: new runs of ${deploymentName} start on it.`);
      io.out(
        `Runs pinned to other builds finish there; check with: npm run deployment -- drain <build-id>`,
      );
      return 0;
    };
  })
    .summary('send every new run to this build (a rollout, or a rollback to an older build)')
    .description(
      `Makes <build-id> the current build: every new run starts on it and stays on it (PINNED). Runs
already open stay on the build that started them. A rollback is the same command with the older
build, whose workers must still be running.`,
    );

  addCommand<Work>(program, 'ramp', '<build-id> <percent> | off', (args) => {
    const [buildId, percent] = atMost(args, 2);
    if (buildId === 'off') {
      return async (client, deploymentName) => {
        await setRampingBuild(client, deploymentName, undefined, 0, { identity: identity() });
        io.out('No ramp: every new run starts on the current build.');
        return 0;
      };
    }
    const share = Number(percent);
    if (!buildId || !/^\d+(\.\d+)?$/.test(percent ?? '') || share <= 0 || share > 100) {
      throw new UsageError('Give the build and a share of new runs, 0 < percent <= 100.');
    }
    return async (client, deploymentName) => {
      await setRampingBuild(client, deploymentName, buildId, share, { identity: identity() });
      io.out(
        `${buildId} takes ${share} % of new runs (chosen by workflow ID); the rest start on the current build.`,
      );
      return 0;
    };
  })
    .summary('send a share of new runs to a build before making it current; "off" ends the ramp')
    .description(
      `Ramps <build-id>: <percent> % of new runs start on it, the others on the current build. Which
runs is decided by a hash of the workflow ID, so a redelivered payment lands on the same build.
"npm run deployment -- current <build-id>" ends the ramp by making the build current.`,
    );

  addCommand<Work>(program, 'drain', '<build-id>', (args) => {
    const [buildId] = atMost(args, 1);
    if (!buildId) throw new UsageError('Name the build to check.');
    return async (client, deploymentName) => {
      const state = await describeDeployment(client, deploymentName);
      const open = await openRunsOn(client, { deploymentName, buildId });
      if (state?.current === buildId || state?.ramping?.buildId === buildId) {
        io.out(
          `${buildId} is ${state.current === buildId ? 'current' : 'ramping'}: it still takes new runs (${open} open).`,
        );
        return EXIT_OPEN_RUNS;
      }
      if (open > 0) {
        io.out(`${buildId}: ${open} open run(s) pinned to it; keep its workers running.`);
        return EXIT_OPEN_RUNS;
      }
      io.out(`${buildId}: drained, no open run. Its workers may stop.`);
      return 0;
    };
  })
    .summary('exit 0 once no open run is pinned to the build, so its workers may stop')
    .description(
      `Counts the open runs whose workflow tasks <build-id> completed (visibility, current within a
second; the server's own drainage status, shown by describe, is refreshed every few minutes).
Exit 0: none, its workers may stop. Exit 1: runs open, or the build still takes new runs.
In a script: until npm run deployment -- drain <build-id>; do sleep 60; done`,
    );
  return program;
}

async function describeCommand(client: Client, name: string, io: DeploymentIo): Promise<number> {
  const state = await describeDeployment(client, name);
  if (!state) {
    io.out(`No build of ${name} has polled this namespace yet: start its workers.`);
    return 0;
  }
  io.out(formatState(state));
  io.out('');
  io.out('build           status     open runs  server drainage');
  for (const build of state.builds) {
    const open = await openRunsOn(client, { deploymentName: name, buildId: build.buildId });
    io.out(
      `${build.buildId.padEnd(15)} ${build.status.padEnd(10)} ${String(open).padStart(9)}  ${build.drainage ?? '-'}`,
    );
  }
  return 0;
}

function formatState(state: DeploymentState): string {
  const ramp = state.ramping
    ? `${state.ramping.buildId} (${state.ramping.percentage} % of new runs)`
    : 'none';
  return `Deployment ${state.deploymentName}: current ${state.current ?? 'none (new runs wait for one)'}, ramping ${ramp}`;
}

function identity(): string {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = `uid ${process.getuid?.() ?? '?'}`;
  }
  return `deployment:${user}@${hostname()}`;
}

export async function main(
  argv: readonly string[],
  io: DeploymentIo = processIo(),
): Promise<number> {
  const parsed = await parseCommandLine<Work>(commandLine(io), argv, io);
  if (parsed.kind === 'help') return 0;
  if (parsed.kind === 'usage-error') return 2;
  let deploymentName: string;
  try {
    deploymentName = loadConfig(io.env).WORKER_DEPLOYMENT_NAME;
  } catch (err) {
    io.err((err as Error).message);
    return 1;
  }
  return withTemporalClient(io, `deployment ${argv[0]}`, (client) =>
    parsed.work(client, deploymentName),
  );
}

function processIo(): DeploymentIo {
  return {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
  };
}

if (require.main === module) {
  runMain(() => main(process.argv.slice(2)), { failureExitCode: 1 });
}
