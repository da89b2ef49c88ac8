import { userInfo } from 'node:os';
import { createInterface } from 'node:readline/promises';

// One meaning per exit code for every command (docs/operator.md, "Exit codes and output");
// results on stdout, diagnostics on stderr.

export const EXIT_OK = 0;
/** Not fine (a doctor FAIL, a build not drained), refused, failed, or unusable config/Temporal. */
export const EXIT_PROBLEM = 1;
/** The command line itself is wrong; nothing was read or sent. */
export const EXIT_USAGE = 2;
/** `ops stuck` found work that keeps failing: cron and monitoring act on this code. */
export const EXIT_STUCK = 3;

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env?: NodeJS.ProcessEnv;
  /** Whether a person can answer `ask` (standard input is a terminal); false when undefined. */
  interactive?: boolean;
  ask?: (question: string) => Promise<string>;
  /** Who runs the command (a retry's reason, who paused or settled); the OS user when undefined. */
  user?: string;
  /** A poll older than this no longer counts as a live worker; tests on a fast-polling server shorten it. */
  pollerFreshMs?: number;
  sleep?(ms: number): Promise<void>;
}

export function userOf(io: CliIo): string {
  return io.user ?? currentUser();
}

export function processIo(): CliIo {
  return {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
    interactive: process.stdin.isTTY === true,
    async ask(question) {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      try {
        return await rl.question(question);
      } finally {
        rl.close();
      }
    },
    user: currentUser(),
  };
}

function currentUser(): string {
  try {
    return userInfo().username;
  } catch {
    // No passwd entry for this uid (common in containers).
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}
