import { hostname } from 'node:os';
import type { Client } from '@temporalio/client';
import type { FailureSummary } from '../operator/failures';
import { describeUndecodable, type UndecodablePayloads } from '../operator/visibility';
import type { Command } from 'commander';
import { addCommand, atMost, type Run, UsageError } from './command-line';
import { type CliIo, userOf } from './io';
import { withTemporalClient } from './temporal-session';

export function asOperator(
  io: CliIo,
  command: string,
  work: (client: Client) => Promise<number>,
): Promise<number> {
  return withTemporalClient(io, command, work, `ops:${userOf(io)}@${hostname()}`);
}

/** "-t, --type": the placeholder a missing value is reported with, the same for every command. */
export const typeOption = [
  '-t, --type <value>',
  'only workflows of this type, e.g. paymentWorkflow',
] as const;

/** A command over the workflows of `--type` (all without it), taking no arguments. */
export function addTypedCommand(
  program: Command,
  io: CliIo,
  name: string,
  usage: string,
  parse: (
    options: Record<string, unknown>,
    workflowType: string | undefined,
  ) => (client: Client) => Promise<number>,
): Command {
  return addCommand<Run>(program, name, usage, (args, options) => {
    atMost(args, 0);
    const work = parse(options, options.type as string | undefined);
    return () => asOperator(io, name, work);
  }).option(...typeOption);
}

/** After a listing that otherwise succeeded, so these lines do not change the exit code. */
export function reportUndecodable(
  io: CliIo,
  workflows: readonly { workflowId: string; type: string; undecodable?: UndecodablePayloads }[],
): void {
  const lines = workflows.flatMap((w) =>
    w.undecodable ? [`  ${describeUndecodable(w, w.undecodable)}`] : [],
  );
  if (lines.length === 0) return;
  io.out(
    `\nCannot be read with the configured PAYLOAD_ENCRYPTION_KEY (set the key they were ` +
      `written with, as an extra key, to read them):\n${lines.join('\n')}`,
  );
}

export function describeFailure(failure: Pick<FailureSummary, 'type' | 'message'>): string {
  return failure.message ? `${failure.type}: ${failure.message}` : failure.type;
}

/** UTC, to the second: the same on every operator's terminal and in the Web UI's UTC mode. */
export function timestamp(date: Date | undefined): string {
  return date ? date.toISOString().replace(/\.\d{3}Z$/, 'Z') : '-';
}

const SINCE_UNITS_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since`: an age (90s, 30m, 2h, 1d) before now, or an ISO-8601 time. */
export function since(value: string | undefined, now = Date.now()): Date | undefined {
  if (value === undefined) return undefined;
  const age = /^(\d+)([smhd])$/.exec(value);
  if (age) return new Date(now - Number(age[1]) * SINCE_UNITS_MS[age[2]!]!);
  const at = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at)) {
    throw new UsageError(
      '--since takes an age (90s, 30m, 2h, 1d) or an ISO time (2026-12-01T08:00Z).',
    );
  }
  return new Date(at);
}
