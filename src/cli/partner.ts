import {
  createPartnerPausesRepository,
  type PartnerPause,
  type PartnerPausesRepository,
} from '../db';
import { wakeHeldWorkflows } from '../operator/partner';
import { type Column, formatTable } from '../operator/table';
import {
  isPartner,
  PARTNER_PAUSE_LONGEST_RECHECK,
  PARTNERS,
  type Partner,
} from '../shared/partner';
import type { Command } from 'commander';
import { addCommand, addGroup, atMost, type Run, UsageError, wholeOption } from './command-line';
import { type CliIo, EXIT_OK, userOf } from './io';
import { withDatabase, withTemporalClient } from './temporal-session';

/** The pause lives in the database, so `pause` and `status` work while Temporal is down. */

export function addPartnerGroup(parent: Command, io: CliIo): void {
  const program = addGroup(
    parent,
    'partner',
    'pause a partner during its outage, resume it at a rate',
  )
    .description('Hold every call to a partner during its outage, and release them after.')
    .addHelpText(
      'after',
      `
Partners: ${PARTNERS.join(', ')}. Reads DATABASE_URL; resume also connects to TEMPORAL_ADDRESS.
See docs/operations.md, "Warehouse outage".`,
    );

  addCommand<Run>(program, 'pause', '<partner> [--reason text]', (args, options) => {
    const partner = partnerArg(atMost(args, 1)[0]);
    const reason = options.reason as string | undefined;
    return withPauses(io, (pauses) =>
      pauseCommand(pauses, io, partner, reason?.trim() || undefined),
    );
  })
    .summary('hold every call to the partner, pending and new, fleet-wide')
    .description(
      `Holds every call to the partner from now on, on every worker: a call due while paused is
not made, and its order waits (the Web UI shows "waiting: <partner> paused by …") without
spending its attempts or its deadline. Nothing is compensated and no failure alert is raised
for the pause, however long it lasts. Survives restarts of every process. Pausing a paused
partner changes nothing (the first pause, its author and time stay).`,
    )
    .option('-r, --reason <text>', 'why (shown with the held orders)');

  addCommand<Run>(program, 'resume', '<partner> [--rate N]', (args, options) => {
    const partner = partnerArg(atMost(args, 1)[0]);
    const rate = wholeOption(options, '--rate', 1, 999_999);
    return withPauses(io, (pauses) => resumeCommand(pauses, io, partner, rate));
  })
    .summary('release the held calls, at most N per second with --rate')
    .description(
      `Ends the pause and wakes the held orders. Each calls the partner again with a fresh retry
policy. With --rate N the held calls are released on a schedule of N per second, so a partner
that has just recovered is not hit by the whole backlog at once; calls that were never held go
as usual. Without Temporal reachable the resume still holds: the held orders read it at their
next re-check (within ${PARTNER_PAUSE_LONGEST_RECHECK}), or at once when this runs again.`,
    )
    .option('--rate <N>', 'release held calls at most N per second');

  addCommand<Run>(program, 'status', '', (args) => {
    atMost(args, 0);
    return withPauses(io, (pauses) => statusCommand(pauses, io));
  }).summary('which partners are paused, by whom and since when');
}

function withPauses(io: CliIo, step: (pauses: PartnerPausesRepository) => Promise<number>): Run {
  return () => withDatabase(io, (db) => step(createPartnerPausesRepository(db)));
}

async function pauseCommand(
  pauses: PartnerPausesRepository,
  io: CliIo,
  partner: Partner,
  reason: string | undefined,
): Promise<number> {
  const result = await pauses.pause(partner, userOf(io), reason);
  const { pause } = result;
  io.out(
    result.kind === 'paused'
      ? `Paused ${partner}: every call to it is held until "npm run ops -- partner resume ${partner}".`
      : `${partner} was already paused by ${pause.pausedBy} since ${pause.pausedAt}; nothing changed.`,
  );
  return EXIT_OK;
}

async function resumeCommand(
  pauses: PartnerPausesRepository,
  io: CliIo,
  partner: Partner,
  rate: number | undefined,
): Promise<number> {
  // The table first: it is what every held call reads, with or without the signals below.
  const resume = await pauses.resume(partner, rate);
  io.out(
    resume.kind === 'resumed'
      ? `Resumed ${partner}${atRate(rate)}.`
      : `${partner} is not paused; nothing changed.`,
  );
  const code = await withTemporalClient(io, `partner resume ${partner}`, async (client) => {
    const { signalled, missed } = await wakeHeldWorkflows(client, partner);
    io.out(
      `${signalled} held order workflow(s) woken` +
        (missed
          ? `; ${missed} missed: they read the resume at their next re-check (within ${PARTNER_PAUSE_LONGEST_RECHECK}), or run this again.`
          : '.'),
    );
    return EXIT_OK;
  });
  // Temporal out of reach (said above) does not undo the resume: the held orders read it at
  // their next re-check; running this again once Temporal answers wakes them at once.
  if (code !== EXIT_OK) {
    io.out(
      `The held orders read the resume at their next re-check (within ${PARTNER_PAUSE_LONGEST_RECHECK}); run this again once Temporal answers to wake them now.`,
    );
  }
  return EXIT_OK;
}

function atRate(rate: number | undefined): string {
  return rate === undefined ? '' : ` at most ${rate} call(s) per second for the held orders`;
}

const STATUS_COLUMNS: Column[] = [
  { header: 'PARTNER' },
  { header: 'STATE' },
  { header: 'PAUSED BY' },
  { header: 'PAUSED AT' },
  { header: 'RESUMED AT' },
  { header: 'REASON', maxWidth: 60 },
];

async function statusCommand(pauses: PartnerPausesRepository, io: CliIo): Promise<number> {
  const known = new Map((await pauses.list()).map((p) => [p.partner, p]));
  io.out(
    formatTable(
      STATUS_COLUMNS,
      PARTNERS.map((partner) => statusRow(partner, known.get(partner))),
    ),
  );
  return EXIT_OK;
}

function statusRow(partner: string, pause: PartnerPause | undefined): string[] {
  if (!pause) return [partner, 'running', '-', '-', '-', '-'];
  const state =
    pause.resumedAt === null
      ? 'PAUSED'
      : pause.resumeRate === null
        ? 'running'
        : `running (released at ${pause.resumeRate}/s)`;
  return [
    partner,
    state,
    pause.pausedBy,
    pause.pausedAt,
    pause.resumedAt ?? '-',
    pause.reason ?? '-',
  ];
}

function partnerArg(value: string | undefined): Partner {
  if (value === undefined) throw new UsageError(`Name the partner: ${PARTNERS.join(', ')}.`);
  if (!isPartner(value)) {
    throw new UsageError(`Unknown partner "${value}"; partners: ${PARTNERS.join(', ')}.`);
  }
  return value;
}
