import { hostname } from 'node:os';
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { WATCHED_TASK_QUEUES } from '../monitoring';
import { describeBuildPollers, type BuildPollers } from '../monitoring/build-pollers';
import {
  describeDeployment,
  OPEN_RUNS_SHOWN,
  openRunsHolding,
  openRunsOn,
  setCurrentBuild,
  setRampingBuild,
  type DeploymentState,
} from '../temporal/deployments';
import { addCommand, addGroup, atMost, type Run, UsageError, theArgument } from './command-line';
import { type CliIo, EXIT_OK, EXIT_PROBLEM, userOf } from './io';
import { loadConfigOrReport, withTemporalClient } from './temporal-session';
import { POLLER_FRESH_MS } from '../monitoring/task-queue-pollers';

type Work = (client: Client, deploymentName: string) => Promise<number>;

export function addDeploymentGroup(parent: Command, io: CliIo): void {
  const program = addGroup(
    parent,
    'deployment',
    'roll a build of the workers out, ramp it, roll it back; which builds still have open runs',
  )
    .description(
      'Roll a build of the workers out, ramp it, roll it back, and see which builds still have open runs.',
    )
    .addHelpText(
      'after',
      `
A build is what one worker image runs: WORKER_DEPLOYMENT_NAME (default order-payments) and its
build ID (the workflow bundle's hash, or WORKER_BUILD_ID), printed by npm run build and in the
worker's "worker started" log line. Start its workers first: the server knows a build once a
worker of it has polled, and refuses to make current a build that lacks a task queue the
current one has (start its heavy worker too). See docs/deploys.md.`,
    );

  addCommand<Run>(program, 'describe', '', (args) => {
    atMost(args, 0);
    return onDeployment(io, 'describe', (client, name) => describeCommand(client, name, io));
  }).summary('the current build, the ramp, and every build with its open runs');

  addCommand<Run>(program, 'current', '[--force] <build-id>', (args, options) => {
    const buildId = theArgument(args, 'Name the build to make current.');
    return onDeployment(io, 'current', async (client, deploymentName) => {
      const checked = await checkWorkers(client, io, deploymentName, buildId, options, 'current');
      if (checked === undefined) return EXIT_PROBLEM;
      await setCurrentBuild(client, { deploymentName, buildId }, { identity: checked });
      io.out(`${buildId} is current: new runs of ${deploymentName} start on it.`);
      io.out(
        `Runs pinned to other builds finish there; check with: npm run ops -- deployment drain <build-id>`,
      );
      return EXIT_OK;
    });
  })
    .summary('send every new run to this build (a rollout, or a rollback to an older build)')
    .description(
      `Makes <build-id> the current build: every new run starts on it and stays on it (PINNED). Runs
already open stay on the build that started them. A rollback is the same command with the older
build, whose workers must still be running.
Refused when the build has no live worker (a poll within ${FRESH_TEXT}) for the workflow and the
activity tasks of every task queue (${WATCHED_TASK_QUEUES.join(', ')}): new runs would wait for
one. --force does it anyway and says so on standard error and in the identity the server records.`,
    )
    .option(...forceOption);

  addCommand<Run>(program, 'ramp', '[--force] <build-id> <percent> | off', (args, options) => {
    const [buildId, percent] = atMost(args, 2);
    if (buildId === 'off') {
      return onDeployment(io, 'ramp', async (client, deploymentName) => {
        await setRampingBuild(client, deploymentName, undefined, 0, { identity: identity(io) });
        io.out('No ramp: every new run starts on the current build.');
        return EXIT_OK;
      });
    }
    const share = Number(percent);
    if (!buildId || !/^\d+(\.\d+)?$/.test(percent ?? '') || share <= 0 || share > 100) {
      throw new UsageError('Give the build and a share of new runs, 0 < percent <= 100.');
    }
    return onDeployment(io, 'ramp', async (client, deploymentName) => {
      const checked = await checkWorkers(client, io, deploymentName, buildId, options, 'ramp');
      if (checked === undefined) return EXIT_PROBLEM;
      await setRampingBuild(client, deploymentName, buildId, share, { identity: checked });
      io.out(
        `${buildId} takes ${share} % of new runs (chosen by workflow ID); the rest start on the current build.`,
      );
      return EXIT_OK;
    });
  })
    .summary('send a share of new runs to a build before making it current; "off" ends the ramp')
    .description(
      `Ramps <build-id>: <percent> % of new runs start on it, the others on the current build. Which
runs is decided by a hash of the workflow ID, so a redelivered payment lands on the same build.
"npm run ops -- deployment current <build-id>" ends the ramp by making the build current.
Refused, like current, when the build lacks a live worker on a task queue; --force overrides.`,
    )
    .option(...forceOption);

  addCommand<Run>(program, 'drain', '<build-id>', (args) => {
    const buildId = theArgument(args, 'Name the build to check.');
    return onDeployment(io, 'drain', async (client, deploymentName) => {
      const state = await describeDeployment(client, deploymentName);
      const open = await openRunsOn(client, { deploymentName, buildId });
      if (state?.current === buildId || state?.ramping?.buildId === buildId) {
        io.out(
          `${buildId} is ${state.current === buildId ? 'current' : 'ramping'}: it still takes new runs (${open} open).`,
        );
        return EXIT_PROBLEM;
      }
      if (open > 0) {
        io.out(`${buildId}: ${open} open run(s) pinned to it; keep its workers running.`);
        const holding = await openRunsHolding(client, { deploymentName, buildId });
        for (const run of holding) {
          const paused =
            run.pausedActivities.length > 0
              ? `  PAUSED: ${run.pausedActivities.join(', ')} (nothing runs it until: npm run temporal -- activity unpause)`
              : '';
          io.out(`  ${run.workflowId} (${run.type}, run ${run.runId})${paused}`);
        }
        if (open > holding.length) io.out(`  … and ${open - holding.length} more`);
        return EXIT_PROBLEM;
      }
      io.out(`${buildId}: drained, no open run. Its workers may stop.`);
      return EXIT_OK;
    });
  })
    .summary('exit 0 once no open run is pinned to the build, so its workers may stop')
    .description(
      `Counts the open runs whose workflow tasks <build-id> completed (visibility, current within a
second; the server's own drainage status, shown by describe, is refreshed every few minutes).
Names the runs that hold it (the first ${OPEN_RUNS_SHOWN}), and marks those with a paused activity:
a paused activity holds its run, and the build, until someone unpauses or resets it.
Exit 0: none, its workers may stop. Exit 1: runs open, or the build still takes new runs.
In a script: until npm run ops -- deployment drain <build-id>; do sleep 60; done`,
    );
}

function onDeployment(io: CliIo, command: string, work: Work): Run {
  return async () => {
    const config = loadConfigOrReport(io);
    if (!config) return EXIT_PROBLEM;
    return withTemporalClient(io, `deployment ${command}`, (client) =>
      work(client, config.WORKER_DEPLOYMENT_NAME),
    );
  };
}

async function describeCommand(client: Client, name: string, io: CliIo): Promise<number> {
  const state = await describeDeployment(client, name);
  if (!state) {
    io.out(`No build of ${name} has polled this namespace yet: start its workers.`);
    return EXIT_OK;
  }
  io.out(formatState(state));
  io.out('');
  io.out(
    `build           status     ramp  open runs  server drainage  live workers (${WATCHED_TASK_QUEUES.join(', ')})`,
  );
  for (const build of state.builds) {
    const version = { deploymentName: name, buildId: build.buildId };
    const open = await openRunsOn(client, version);
    const pollers = await describeBuildPollers(
      client.connection,
      client.options.namespace,
      version,
      WATCHED_TASK_QUEUES,
      { freshMs: io.pollerFreshMs },
    );
    const ramp = state.ramping?.buildId === build.buildId ? `${state.ramping.percentage} %` : '-';
    io.out(
      `${build.buildId.padEnd(15)} ${build.status.padEnd(10)} ${ramp.padStart(4)} ${String(open).padStart(10)}  ${(build.drainage ?? '-').padEnd(15)}  ${formatPollers(pollers)}`,
    );
  }
  return EXIT_OK;
}

/** `payments 2/2, heavy 0/1`: workers polling workflow/activity tasks, per queue. */
function formatPollers(pollers: BuildPollers): string {
  const queues = pollers.queues
    .map((q) => `${q.taskQueue} ${q.workflow.length}/${q.activity.length}`)
    .join(', ');
  return pollers.missing.length === 0 ? queues : `${queues}  MISSING ${pollers.missing.join('; ')}`;
}

function formatState(state: DeploymentState): string {
  const ramp = state.ramping
    ? `${state.ramping.buildId} (${state.ramping.percentage} % of new runs)`
    : 'none';
  return `Deployment ${state.deploymentName}: current ${state.current ?? 'none (new runs wait for one)'}, ramping ${ramp}`;
}

const FRESH_TEXT = `${POLLER_FRESH_MS / 60_000} minutes`;
const forceOption = [
  '--force',
  'do it even though the build lacks a live worker on a task queue (new runs wait for one)',
] as const;

/**
 * Whether `buildId` has live workers on every task queue. Refused (undefined, the reason on
 * stderr) unless --force; with --force, the identity the server records says so.
 */
async function checkWorkers(
  client: Client,
  io: CliIo,
  deploymentName: string,
  buildId: string,
  options: Record<string, unknown>,
  action: 'current' | 'ramp',
): Promise<string | undefined> {
  const pollers = await describeBuildPollers(
    client.connection,
    client.options.namespace,
    { deploymentName, buildId },
    WATCHED_TASK_QUEUES,
    { freshMs: io.pollerFreshMs },
  );
  if (pollers.missing.length === 0) return identity(io);
  const missing = `no live worker of ${buildId} polls ${pollers.missing.join(', ')}`;
  if (options.force !== true) {
    io.err(
      `Refused: ${missing}. New runs sent to it would wait, unprocessed, until one does.\n` +
        `Start its workers (npm run worker and npm run heavy-worker with this build), check with\n` +
        `npm run ops -- deployment describe, and try again; --force does it anyway.`,
    );
    return undefined;
  }
  io.err(`WARNING: ${action} ${buildId} forced although ${missing}.`);
  return `${identity(io)} --force (${missing})`;
}

function identity(io: CliIo): string {
  return `deployment:${userOf(io)}@${hostname()}`;
}
