/**
 * Every entry file ends in `runMain(main)`. What `main` resolves to becomes `process.exitCode`,
 * so Node exits once the last handle closes and piped output is never cut short. What it throws
 * at start-up (invalid config, a port in use) is a message for a person on stderr, and the
 * process exits at once with `failureExitCode`; CLIs show the stack of the unexpected
 * (`stack: true`). Signals: ./shutdown.ts.
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
