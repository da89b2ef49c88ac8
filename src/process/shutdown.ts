/** Repeats of the first signal within this window are echoes, not a second request. */
const ECHO_WINDOW_MS = 2_000;

/**
 * Ctrl-C reaches every process of the foreground group, and npm and tsx relay it: echoes within
 * the window are ignored. A later signal exits at once, so a stuck shutdown can be broken.
 */
export function onShutdownSignal(handler: (signal: NodeJS.Signals) => void | Promise<void>): void {
  let firstAt: number | undefined;
  const listener = (signal: NodeJS.Signals) => {
    if (firstAt === undefined) {
      firstAt = Date.now();
      void Promise.resolve(handler(signal));
      return;
    }
    if (Date.now() - firstAt < ECHO_WINDOW_MS) return;
    process.stderr.write(`received ${signal} again: exiting now\n`);
    process.exit(130);
  };
  process.on('SIGINT', listener);
  process.on('SIGTERM', listener);
}

/** For processes whose shutdown depends on start-up: a worker waiting for Temporal just stops. */
export function abortOnShutdownSignal(): AbortSignal {
  const controller = new AbortController();
  onShutdownSignal((signal) => controller.abort(signal));
  return controller.signal;
}

export function whenAborted(signal: AbortSignal, stop: () => void): void {
  if (signal.aborted) stop();
  else signal.addEventListener('abort', stop, { once: true });
}
