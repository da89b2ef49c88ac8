/**
 * The one way every process of this project starts and ends, from the workers to the CLIs: each
 * entry file is a short composition root, `runMain(main)` at its foot.
 *
 * - `main` resolves: with an exit code (a CLI's verdict) or nothing (a long-running process that
 *   has stopped). It becomes `process.exitCode`, and Node exits once the last handle is closed,
 *   so piped output is never cut short.
 * - `main` throws: what fails at start-up (invalid configuration, a port in use, a server that
 *   cannot be reached) is a message for a person, not a stack trace, on stderr, and the process
 *   exits with `failureExitCode` (1 unless the CLI documents another) at once, whatever is still
 *   open. CLIs, which report what they expect themselves, show the stack of what they did not
 *   (`stack: true`).
 *
 * Signals are the other half: long-running processes drain on the first SIGINT or SIGTERM
 * through `onShutdownSignal` / `abortOnShutdownSignal` (./shutdown.ts), and exit 130 on a later
 * one.
 */
export function runMain(
  main: () => Promise<number | void>,
  { failureExitCode = 1, stack = false }: { failureExitCode?: number; stack?: boolean } = {},
): void {
  main().then(
    (code) => {
      if (typeof code === 'number') process.exitCode = code;
    },
    (err: unknown) => {
      const text = err instanceof Error ? (stack && err.stack) || err.message : String(err);
      process.stderr.write(`${text}\n`);
      process.exit(failureExitCode);
    },
  );
}
