import { Command, CommanderError } from 'commander';

/**
 * The command line of the CLIs, on commander: commands, options, generated help and usage
 * errors, parsed in-process (no `process.exit`, output through the CLI's own `io`) so tests run
 * a CLI as a function. A command's action only returns the work it stands for; the CLI runs
 * that work after parsing, once it has a Temporal connection.
 */

/** A wrong command line: reported with the help of the command it concerns, exit code 2. */
export class UsageError extends Error {}

export interface CommandLineIo {
  out(text: string): void;
  err(text: string): void;
}

/** What a command line came to: work to run, help shown (exit 0), or a usage error (exit 2). */
export type Parsed<Work> =
  { kind: 'work'; work: Work } | { kind: 'help' } | { kind: 'usage-error' };

/** A program whose help lists each command with its usage (`start [--from ID] …`). */
export function createProgram(name: string, description: string): Command {
  return configure(new Command(name))
    .description(description)
    .usage('<command> [options]')
    .configureHelp({
      helpWidth: HELP_WIDTH,
      subcommandTerm: (cmd) => `${cmd.name()} ${cmd.usage()}`,
    });
}

/**
 * A command of `program`: `parse` reads its arguments and options (throwing `UsageError` for a
 * wrong one) and returns its work.
 */
export function addCommand<Work>(
  program: Command,
  name: string,
  usage: string,
  parse: (args: string[], options: Record<string, unknown>) => Work,
): Command {
  const command = configure(program.command(name)).usage(usage);
  return command.action(() => {
    works.set(command, parse(command.args, command.opts()));
  });
}

/** The action of a program without commands (`npm run doctor [-- options]`). */
export function onProgram<Work>(
  program: Command,
  parse: (args: string[], options: Record<string, unknown>) => Work,
): Command {
  return program.action(() => {
    works.set(program, parse(program.args, program.opts()));
  });
}

const works = new WeakMap<Command, unknown>();

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

/**
 * Parses `argv` with `program`. Help goes to `io.out`. A usage error goes to `io.err`, followed
 * by the help of the command it concerns (no command at all: the program's help).
 */
export async function parseCommandLine<Work>(
  program: Command,
  argv: readonly string[],
  io: CommandLineIo,
): Promise<Parsed<Work>> {
  const commandNamed = (name: string | undefined) =>
    program.commands.find((c) => c.name() === name);
  const [first, ...rest] = argv;
  const hasCommands = program.commands.length > 0;
  if (hasCommands && first === undefined) {
    io.err(help(program));
    return { kind: 'usage-error' };
  }
  if (hasCommands && first === 'help') {
    io.out(help(commandNamed(rest[0]) ?? program));
    return { kind: 'help' };
  }
  const command = hasCommands ? commandNamed(first) : program;
  const output = { writeOut: (text: string) => io.out(text.trimEnd()), outputError: () => {} };
  program.configureOutput(output);
  for (const c of program.commands) c.configureOutput(output);
  try {
    if (!command && first !== undefined && !first.startsWith('-')) {
      throw new UsageError(`Unknown command "${first}".`);
    }
    await program.parseAsync([...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError && err.code === 'commander.helpDisplayed') {
      return { kind: 'help' };
    }
    if (!(err instanceof CommanderError) && !(err instanceof UsageError)) throw err;
    const message = err instanceof CommanderError ? sentence(err.message) : err.message;
    io.err(`${message}\n\n${help(command ?? program)}`);
    return { kind: 'usage-error' };
  }
  if (!command || !works.has(command)) {
    io.err(help(program));
    return { kind: 'usage-error' };
  }
  return { kind: 'work', work: works.get(command) as Work };
}

/** Refuses arguments beyond the first `max`: `Unexpected argument "x".` */
export function atMost(args: string[], max: number): string[] {
  if (args.length > max) throw new UsageError(`Unexpected argument "${args[max]}".`);
  return args;
}

/** The help of `command` as `--help` shows it, with the text added after it. */
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
