import { createUnmatchedRepository, type UnmatchedRepository } from '../db';
import { type Column, formatTable } from '../operator/table';
import {
  attachUnmatched,
  attachedEventId,
  closeUnmatched,
  describeResolution,
} from '../operator/unmatched';
import { createPaymentStarter, type PaymentStarter } from '../temporal/payment-starter';
import type { Command } from 'commander';
import {
  addCommand,
  addGroup,
  atMost,
  type Run,
  UsageError,
  wholeNumber,
  wholeOption,
} from './command-line';
import { type CliIo, EXIT_OK, EXIT_PROBLEM, userOf } from './io';
import { withDatabase, withTemporalClient } from './temporal-session';

// Only `attach` needs Temporal: the inbox stays usable while Temporal is down.

interface Session {
  inbox: UnmatchedRepository;
  shopCurrency: string;
  payments?: PaymentStarter;
}
type Step = (session: Session) => Promise<number>;

export function addUnmatchedGroup(parent: Command, io: CliIo): void {
  const program = addGroup(
    parent,
    'unmatched',
    'the unmatched inbox: signed deliveries no workflow could act on as sent',
  )
    .description(
      'The unmatched inbox: signed provider deliveries that no workflow could act on as sent.',
    )
    .addHelpText(
      'after',
      `
Each entry is one provider event (a redelivery counts, it adds no entry), with why it could not
be acted on: unknown_order (found by the payment workflow), foreign_order_ref, currency,
amount_mismatch, livemode, account or thin_unresolved. Resolve each exactly once: attach it to an order, mark it
refunded outside this system, or dismiss it. See docs/operator.md.

Reads DATABASE_URL; attach also connects to TEMPORAL_ADDRESS.`,
    );

  addCommand<Run>(program, 'list', '[--all | --resolved] [--limit N]', (args, options) => {
    atMost(args, 0);
    const state = options.all ? 'all' : options.resolved ? 'resolved' : 'open';
    const limit = wholeOption(options, '--limit', 1);
    return inSession(io, 'list', false, (s) => listCommand(s, io, state, limit));
  })
    .summary('list open entries, newest first')
    .option('--all', 'open and resolved entries')
    .option('--resolved', 'resolved entries only')
    .option('-n, --limit <N>', 'show at most N (default: 100)');

  addCommand<Run>(program, 'show', '<id>', (args) => {
    const id = entryId(atMost(args, 1)[0]);
    return inSession(io, 'show', false, (s) => showCommand(s, io, id));
  }).summary('one entry with what the provider sent');

  addCommand<Run>(program, 'attach', '<id> --order <orderId> [--note text]', (args, options) => {
    const id = entryId(atMost(args, 1)[0]);
    const orderId = wholeOption(options, '--order', 1);
    if (orderId === undefined) throw new UsageError('Name the order: --order <orderId>.');
    const note = options.note as string | undefined;
    return inSession(io, 'attach', true, (s) => attachCommand(s, io, id, orderId, note));
  })
    .summary('attach a payment to an order: it then flows as a normal payment, once')
    .description(
      `Records that the entry's payment belongs to the order, then starts its payment workflow
(payment-unmatched~<id>), which pays the order if the amount is its total (else flags it for
refund review, as any payment). Running it again, or after a crash in between, starts nothing
twice. Only a payment in the shop's currency can be attached.`,
    )
    .option('-o, --order <orderId>', 'the order the payment belongs to')
    .option('--note <text>', 'why (kept with the entry)');

  addCommand<Run>(program, 'refunded', '<id> [--note text]', (args, options) => {
    const id = entryId(atMost(args, 1)[0]);
    const note = options.note as string | undefined;
    return inSession(io, 'refunded', false, (s) =>
      closeCommand(s, io, id, { kind: 'refunded_outside', note: withUser(io, note) }),
    );
  })
    .summary('mark an entry refunded outside this system (e.g. in the provider’s dashboard)')
    .option('--note <text>', 'what was done (kept with the entry)');

  addCommand<Run>(program, 'dismiss', '<id> --reason <text>', (args, options) => {
    const id = entryId(atMost(args, 1)[0]);
    const reason = options.reason as string | undefined;
    if (!reason?.trim()) throw new UsageError('Say why: --reason <text>.');
    return inSession(io, 'dismiss', false, (s) =>
      closeCommand(s, io, id, { kind: 'dismissed', note: withUser(io, reason) }),
    );
  })
    .summary('dismiss an entry with a reason (a test event, another integration’s…)')
    .option('-r, --reason <text>', 'why it needs nothing (kept with the entry)');
}

function inSession(io: CliIo, command: string, temporal: boolean, step: Step): Run {
  return () =>
    withDatabase(io, (db, config) => {
      const session = { inbox: createUnmatchedRepository(db), shopCurrency: config.SHOP_CURRENCY };
      if (!temporal) return step(session);
      return withTemporalClient(io, `unmatched ${command}`, (client) =>
        // A person waits at the terminal; a start that takes longer than this is an outage.
        step({ ...session, payments: createPaymentStarter(client, { startTimeoutMs: 10_000 }) }),
      );
    });
}

const LIST_COLUMNS: Column[] = [
  { header: 'ID' },
  { header: 'REASON' },
  { header: 'PROVIDER' },
  { header: 'EVENT', maxWidth: 50 },
  { header: 'SEEN' },
  { header: 'FIRST SEEN' },
  { header: 'LAST SEEN' },
  { header: 'RESOLUTION', maxWidth: 60 },
];

async function listCommand(
  session: Session,
  io: CliIo,
  state: 'open' | 'resolved' | 'all',
  limit: number | undefined,
): Promise<number> {
  const entries = await session.inbox.list({ state, limit });
  if (entries.length === 0) {
    io.out(state === 'open' ? 'No open unmatched entries.' : 'No unmatched entries.');
    return EXIT_OK;
  }
  io.out(
    formatTable(
      LIST_COLUMNS,
      entries.map((e) => [
        String(e.id),
        e.reason,
        e.provider,
        e.eventId,
        String(e.deliveryCount),
        seconds(e.firstSeenAt),
        seconds(e.lastSeenAt),
        describeResolution(e.resolution),
      ]),
    ),
  );
  if (state !== 'resolved') {
    io.out(
      '\nResolve one: npm run ops -- unmatched attach <id> --order <orderId> | refunded <id> | ' +
        'dismiss <id> --reason <text>',
    );
  }
  return EXIT_OK;
}

async function showCommand(session: Session, io: CliIo, id: number): Promise<number> {
  const entry = await session.inbox.get(id);
  if (!entry) {
    io.err(`No unmatched entry ${id}.`);
    return EXIT_PROBLEM;
  }
  io.out(
    [
      `Entry ${entry.id}: ${entry.reason}`,
      `Provider:    ${entry.provider}`,
      `Event:       ${entry.eventId}`,
      `Deliveries:  ${entry.deliveryCount} (first ${seconds(entry.firstSeenAt)}, last ${seconds(entry.lastSeenAt)})`,
      `Resolution:  ${describeResolution(entry.resolution)}`,
      `Payload:\n${JSON.stringify(entry.payload, null, 2)}`,
    ].join('\n'),
  );
  return EXIT_OK;
}

async function attachCommand(
  session: Session,
  io: CliIo,
  id: number,
  orderId: number,
  note: string | undefined,
): Promise<number> {
  const { payments } = session;
  if (!payments) throw new Error('attach runs with a Temporal connection');
  const result = await attachUnmatched(
    { inbox: session.inbox, payments, shopCurrency: session.shopCurrency },
    id,
    orderId,
    withUser(io, note),
  );
  if (result.kind === 'refused') {
    io.err(`Refused: ${result.reason}. Nothing was changed.`);
    return EXIT_PROBLEM;
  }
  const { started } = result;
  io.out(
    result.first
      ? `Attached entry ${id} to order ${orderId}.`
      : `Entry ${id} was already attached to order ${orderId}.`,
  );
  io.out(
    started.duplicate
      ? `Its payment workflow ${started.workflowId} was already started: nothing started twice.`
      : `Started its payment workflow ${started.workflowId} (event ${attachedEventId({ id })}).`,
  );
  return EXIT_OK;
}

async function closeCommand(
  session: Session,
  io: CliIo,
  id: number,
  resolution: Parameters<typeof closeUnmatched>[2],
): Promise<number> {
  const result = await closeUnmatched(session.inbox, id, resolution);
  if (result.kind === 'refused') {
    io.err(`Refused: ${result.reason}. Nothing was changed.`);
    return EXIT_PROBLEM;
  }
  io.out(`Entry ${id} ${describeResolution(result.entry.resolution)}.`);
  return EXIT_OK;
}

function withUser(io: CliIo, note: string | undefined): string {
  const user = userOf(io);
  return note?.trim() ? `${note.trim()} (by ${user})` : `by ${user}`;
}

function entryId(value: string | undefined): number {
  if (value === undefined) throw new UsageError('Name the entry: its ID, from "unmatched list".');
  return wholeNumber('the entry ID', value, 1)!;
}

function seconds(at: string): string {
  return at.replace(/\.\d{3}Z$/, 'Z');
}
