import { Command, CommanderError, Option } from 'commander';

// Parsed in-process (no `process.exit`, output through `io`) so tests run a CLI as a function.

/** A wrong command line: reported with the help of the command it concerns, exit code 2. */
export class UsageError extends Error {}

export interface CommandLineIo {
  out(text: string): void;
  err(text: string): void;
}

/** What a command line came to: work to run, help shown (exit 0), or a usage error (exit 2). */
export type Parsed<Work> =
  { kind: 'work'; work: Work } | { kind: 'help' } | { kind: 'usage-error' };

type Parse<Work> = (args: string[], options: Record<string, unknown>) => Work;

export function createProgram(name: string, description: string): Command {
  return asGroup(configure(new Command(name)).description(description));
}

export function addGroup(parent: Command, name: string, summary: string): Command {
  return asGroup(configure(parent.command(name)).summary(summary));
}

/** `parse` reads its arguments and options (throwing `UsageError`) and returns its work. */
export function addCommand<Work>(
  parent: Command,
  name: string,
  usage: string,
  parse: Parse<Work>,
): Command {
  return onProgram(configure(parent.command(name)).usage(usage), parse);
}

/**
 * A tool of dev/ or bench/ (`npm start`, `npm run chaos`, `npm run bench:e2e`…): one command with
 * options, the same parser, help and usage errors as the operator program (issue 28). Arguments
 * it does not declare with `.argument()` are a usage error, as an unknown option is.
 */
export function createTool(name: string, description: string): Command {
  return configure(new Command(name))
    .description(description)
    .usage('[options]')
    .allowExcessArguments(false);
}

/** A tool's command line came to work, or to the exit code of help (0) or a usage error (2). */
export type ToolLine<Work> = { kind: 'work'; work: Work } | { kind: 'exit'; code: 0 | 2 };

/** Help and usage errors go to the process's stdout and stderr unless `io` says otherwise. */
export async function parseTool<Work>(
  tool: Command,
  parse: Parse<Work>,
  argv: readonly string[] = process.argv.slice(2),
  io: CommandLineIo = STANDARD_IO,
): Promise<ToolLine<Work>> {
  const parsed = await parseCommandLine<Work>(onProgram(tool, parse), argv, io);
  if (parsed.kind === 'work') return parsed;
  return { kind: 'exit', code: parsed.kind === 'help' ? 0 : 2 };
}

const STANDARD_IO: CommandLineIo = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};

export function onProgram<Work>(command: Command, parse: Parse<Work>): Command {
  return command.action(() => {
    works.set(command, parse(command.args, command.opts()));
  });
}

const works = new WeakMap<Command, unknown>();

function asGroup(command: Command): Command {
  return command.usage('<command> [options]').configureHelp({
    helpWidth: HELP_WIDTH,
    subcommandTerm: (cmd) => `${cmd.name()} ${cmd.usage()}`,
  });
}

function configure(command: Command): Command {
  return command
    .exitOverride()
    .helpOption('-h, --help', 'this help')
    .helpCommand(false)
    .showSuggestionAfterError(false)
    .allowExcessArguments(true)
    .configureHelp({ helpWidth: HELP_WIDTH });
}

// The same help on a terminal of any width and in a log.
const HELP_WIDTH = 100;

/** A usage error goes to `io.err`, followed by the help of the command or group it concerns. */
export async function parseCommandLine<Work>(
  program: Command,
  argv: readonly string[],
  io: CommandLineIo,
): Promise<Parsed<Work>> {
  let command = program;
  for (let i = 0; command.commands.length > 0; i++) {
    const word = argv[i];
    if (word === undefined) {
      io.err(help(command));
      return { kind: 'usage-error' };
    }
    if (word === 'help') {
      io.out(help(childNamed(command, argv[i + 1]) ?? command));
      return { kind: 'help' };
    }
    // An option at a group's level (--help, or a wrong one): commander answers it below.
    if (word.startsWith('-')) break;
    const child = childNamed(command, word);
    if (!child) {
      io.err(`Unknown command "${word}".\n\n${help(command)}`);
      return { kind: 'usage-error' };
    }
    command = child;
  }
  const output = { writeOut: (text: string) => io.out(text.trimEnd()), outputError: () => {} };
  for (const c of [program, ...descendants(program)]) c.configureOutput(output);
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError && err.code === 'commander.helpDisplayed') {
      return { kind: 'help' };
    }
    if (!(err instanceof CommanderError) && !(err instanceof UsageError)) throw err;
    const message = err instanceof CommanderError ? sentence(err.message) : err.message;
    io.err(`${message}\n\n${help(command)}`);
    return { kind: 'usage-error' };
  }
  if (!works.has(command)) {
    io.err(help(command));
    return { kind: 'usage-error' };
  }
  return { kind: 'work', work: works.get(command) as Work };
}

/**
 * An option's or argument's whole number from `min` (default 0) to `max`, for every command and
 * tool alike; unset stays undefined. Unbounded, it stays within the database's integer, the range
 * of an order or entry ID.
 */
export function wholeNumber(
  name: string,
  value: string | undefined,
  min = 0,
  max?: number,
): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= (max ?? MAX_INTEGER))) {
    const range = max === undefined ? `of ${min} or more` : `from ${min} to ${max}`;
    throw new UsageError(`${name} must be a whole number ${range}.`);
  }
  return n;
}

/** `wholeNumber` of an option, by its flag: `--min-attempts` reads commander's `minAttempts`. */
export function wholeOption(
  options: Record<string, unknown>,
  flag: string,
  min?: number,
  max?: number,
): number | undefined {
  const value = options[new Option(flag).attributeName()] as string | undefined;
  return wholeNumber(flag, value, min, max);
}

// PostgreSQL's integer: the order and entry IDs, and beyond any count a person types.
const MAX_INTEGER = 2_147_483_647;

export function atMost(args: string[], max: number): string[] {
  if (args.length > max) throw new UsageError(`Unexpected argument "${args[max]}".`);
  return args;
}

/** The command's one argument, which it cannot do without: `missing` asks for it. */
export function theArgument(args: string[], missing: string): string {
  const [value] = atMost(args, 1);
  if (!value) throw new UsageError(missing);
  return value;
}

function childNamed(command: Command, name: string | undefined): Command | undefined {
  return command.commands.find((c) => c.name() === name);
}

function descendants(command: Command): Command[] {
  return command.commands.flatMap((c) => [c, ...descendants(c)]);
}

function help(command: Command): string {
  let text = '';
  command.configureOutput({ writeOut: (chunk: string) => (text += chunk) });
  command.outputHelp();
  return text.trimEnd();
}

/** commander's message for a wrong command line, as a sentence: `Unknown option '--bogus'.` */
function sentence(message: string): string {
  const text = message.replace(/^error: /, '');
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}${/[.!?]$/.test(text) ? '' : '.'}`;
}

export type Run = () => Promise<number>;
