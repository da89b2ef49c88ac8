/**
 * Every entry file ends in `runMain(main)`. Its result becomes `process.exitCode`, so piped
 * output is never cut short; a start-up failure (invalid config, a port in use) is a message on
 * stderr and an immediate exit with `failureExitCode`. Signals: ./shutdown.ts.
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
