import { createSettlementsRepository, type Settlement, type SettlementsRepository } from '../db';
import { handOverSettlement, recordSettlement } from '../operator/settle';
import type { Command } from 'commander';
import { addCommand, atMost, type Run, UsageError, wholeNumber } from './command-line';
import { type CliIo, EXIT_OK, EXIT_PROBLEM, userOf } from './io';
import { withDatabase, withTemporalClient } from './temporal-session';

/** The database first and alone; a rerun after any failure hands over the same settlement. */

/** Enough for a sentence and a ticket number; the order workflow shows it in its details. */
const MAX_REASON_LENGTH = 500;

interface Request {
  orderId: number;
  reason: string;
  by: string;
}

export function addSettleCommand(program: Command, io: CliIo): void {
  addCommand<Run>(program, 'settle', '<orderId> --reason <text> [--by <who>]', (args, options) => {
    const [order] = atMost(args, 1);
    // Required: unset is refused as a missing ID is.
    const orderId = wholeNumber('The order ID', order ?? '', 1)!;
    const reason = (options.reason as string | undefined)?.trim();
    if (!reason) throw new UsageError('Say why: --reason <text>.');
    if (reason.length > MAX_REASON_LENGTH) {
      throw new UsageError(
        `--reason is ${reason.length} characters; keep it to ${MAX_REASON_LENGTH}.`,
      );
    }
    const by = (options.by as string | undefined)?.trim();
    if (options.by !== undefined && !by) throw new UsageError('--by names who decided.');
    return () => settle(io, { orderId, reason, by: by ?? userOf(io) });
  })
    .summary('settle a pending order with the payments it has')
    .description(
      'Settle a pending order with the payments it has (short, partial or split): it turns paid and is fulfilled once.',
    )
    .argument('<orderId>', 'the pending order')
    .option('-r, --reason <text>', 'why (recorded with the settlement, shown on its workflow)')
    .option('--by <who>', 'who decided (default: the user running the command)')
    .addHelpText(
      'after',
      `
Refused (exit 1, nothing changed) when the order does not exist, is already paid, has no payment,
or has refunds recorded. Running it again does nothing twice: it says the order was settled, and
hands the same settlement to the order's workflow if that had not happened yet.

Reads DATABASE_URL, then connects to TEMPORAL_ADDRESS.`,
    );
}

async function settle(io: CliIo, request: Request): Promise<number> {
  return withDatabase(io, (db) => settleIn(createSettlementsRepository(db), io, request));
}

async function settleIn(
  settlements: SettlementsRepository,
  io: CliIo,
  { orderId, reason, by }: Request,
): Promise<number> {
  const outcome = await recordSettlement(settlements, { orderId, settledBy: by, reason });
  if (outcome.kind === 'refused') {
    io.err(`Refused: ${outcome.reason}. Nothing was changed.`);
    return EXIT_PROBLEM;
  }
  const { settlement } = outcome;
  if (outcome.kind === 'settled') {
    const ids = settlement.paymentIds.join(', ');
    io.out(
      `Settled order ${orderId} with payment${settlement.paymentIds.length > 1 ? 's' : ''} ${ids} ` +
        `(${outcome.paidAmount} paid), ${whoWhenWhy(settlement)}.`,
    );
  } else {
    io.out(
      `Order ${orderId} was already settled, ${whoWhenWhy(settlement)}: nothing settled twice.`,
    );
  }
  if (await settlements.handledBy(orderId)) {
    io.out(`Its workflow has already fulfilled the settlement: nothing to hand over.`);
    return EXIT_OK;
  }
  return await withTemporalClient(io, 'settle', async (client) => {
    const workflowId = await handOverSettlement(client, settlement);
    io.out(`Handed to the order's workflow ${workflowId}, which fulfils it once.`);
    return EXIT_OK;
  });
}

function whoWhenWhy(settlement: Settlement): string {
  const at = settlement.settledAt.replace(/\.\d{3}Z$/, 'Z');
  return `by ${settlement.settledBy} at ${at} (${settlement.reason})`;
}
