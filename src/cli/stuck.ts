import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { heldWorkflowIds } from '../operator/partner';
import { DEFAULT_MIN_ATTEMPTS, groupByCause, inspectRunningWorkflows } from '../operator/stuck';
import { formatTable } from '../operator/table';
import { PARTNERS } from '../shared/partner';
import { wholeOption } from './command-line';
import { type CliIo, EXIT_OK, EXIT_STUCK } from './io';
import { addTypedCommand, reportUndecodable, timestamp } from './report';
import { errorMessage } from './temporal-session';

/** `ops stuck`: running workflows whose work keeps failing, for a person and for cron. */

export function addStuckCommand(program: Command, io: CliIo): void {
  addTypedCommand(
    program,
    io,
    'stuck',
    '[--min-attempts N] [--type T]',
    (options, workflowType) => {
      const minAttempts = wholeOption(options, '--min-attempts', 1);
      return (c) => stuckCommand(c, io, { minAttempts, workflowType });
    },
  )
    .summary('list running workflows whose work keeps failing, grouped by cause; exit 3 if any')
    .description(
      `Lists running workflows that are not getting anywhere, grouped by cause (the activity type,
or the workflow task, and the type of its last failure), largest group first:
  - an activity on attempt N or later, with its last failure and when the server runs it next
    (e.g. notifyWarehouse while the warehouse is down, recordPayment while the database is);
  - an activity an operator paused (temporal activity pause), whatever its attempt: no attempt
    runs until someone unpauses or resets it, so it shows no next retry;
  - a workflow task past its first attempt: the workflow code itself throws, for example
    non-determinism after a bad deploy. It retries forever until the code is fixed.
Runs held by a partner pause (npm run ops -- partner pause) are listed first, by partner; they
are not stuck (they spend nothing) and do not change the exit code.
Each row names the order, the attempt (of the retry policy's maximum), the next retry and
whether it is paused. Reads the description of every running workflow, and the recent history
of one whose workflow task fails. To act on a retrying activity use the Temporal CLI
(npm run temporal -- activity pause|unpause|reset|update-options): see docs/operations.md.

Exit code 3 when something is stuck (for cron and monitoring), 0 when nothing is.`,
    )
    .option(
      '-m, --min-attempts <N>',
      `activity attempts that count as stuck (default: ${DEFAULT_MIN_ATTEMPTS})`,
    );
}

async function stuckCommand(
  client: Client,
  io: CliIo,
  filter: { minAttempts?: number; workflowType?: string },
): Promise<number> {
  const { stuck, undecodable } = await inspectRunningWorkflows(client, filter);
  await reportHeld(client, io);
  const unreadable = undecodable.map((u) => ({
    workflowId: u.workflowId,
    type: u.type,
    undecodable: u,
  }));
  if (stuck.length === 0) {
    io.out(
      `Nothing stuck: no running workflow has an activity on attempt ${filter.minAttempts ?? DEFAULT_MIN_ATTEMPTS}+, ` +
        'a paused activity or a failing workflow task.',
    );
    reportUndecodable(io, unreadable);
    return EXIT_OK;
  }
  const groups = groupByCause(stuck);
  io.out(`${stuck.length} stuck in ${groups.length} group(s), by what fails and how:`);
  const now = Date.now();
  for (const group of groups) {
    io.out('');
    io.out(
      `${group.stuckOn} failing with ${group.failureType}: ${group.work.length} run(s)${group.example ? ` (last: ${truncate(group.example, 100)})` : ''}`,
    );
    io.out(
      formatTable(
        [
          { header: 'ORDER' },
          { header: 'WORKFLOW ID' },
          { header: 'TYPE' },
          { header: 'ATTEMPT' },
          { header: 'NEXT RETRY' },
          { header: 'STATE' },
        ],
        group.work.map((s) => [
          s.orderId ?? '-',
          s.workflowId,
          s.type,
          s.maximumAttempts ? `${s.attempts} of ${s.maximumAttempts}` : String(s.attempts),
          s.paused ? '-' : nextRetry(s.nextAttemptAt, now),
          s.paused
            ? 'PAUSED: nothing runs until unpaused'
            : s.stuckOn.kind === 'workflow task'
              ? 'retrying (the code throws)'
              : 'retrying',
        ]),
      )
        .split('\n')
        .map((line) => `  ${line}`)
        .join('\n'),
    );
  }
  reportUndecodable(io, unreadable);
  return EXIT_STUCK;
}

/** Not counted as stuck (no exit 3): an operator chose the pause, and nothing is spent. */
async function reportHeld(client: Client, io: CliIo): Promise<void> {
  for (const partner of PARTNERS) {
    let held: string[];
    try {
      held = await heldWorkflowIds(client, partner);
    } catch (err) {
      // A namespace without the PartnerPaused attribute (npm run ops -- doctor prints its
      // command) refuses the query: the stuck work below is still worth listing.
      io.err(`Could not list the runs held by a ${partner} pause: ${errorMessage(err)}`);
      continue;
    }
    if (held.length === 0) continue;
    held.sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
    io.out(
      `Held by the ${partner} pause: ${held.length} run(s) wait, spending no attempts, for ` +
        `"npm run ops -- partner resume ${partner} [--rate N]" (who paused: ops partner status):`,
    );
    io.out(`  ${held.join(' ')}`);
    io.out('');
  }
}

function nextRetry(at: Date | undefined, now: number): string {
  if (!at) return 'running now';
  const seconds = Math.round((at.getTime() - now) / 1000);
  return `${timestamp(at)} (${seconds <= 0 ? 'due' : `in ${seconds} s`})`;
}

function truncate(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
