/** Repeats of the first signal within this window are echoes, not a second request. */
const ECHO_WINDOW_MS = 2_000;

/**
 * Calls `handler` once on the first SIGINT or SIGTERM. Ctrl-C in a terminal reaches every
 * process of the foreground group, and npm and tsx relay it to their child as well, so the same
 * press arrives two or three times within milliseconds: those echoes are ignored. A signal that
 * comes later, while shutdown is still running, exits at once, so a stuck shutdown can always
 * be broken with another Ctrl-C.
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

/**
 * An AbortSignal that aborts on the first SIGINT or SIGTERM (with the signal's name as its
 * reason), for processes whose shutdown depends on how far start-up got: a worker still waiting
 * for Temporal just stops waiting, a running one drains.
 */
export function abortOnShutdownSignal(): AbortSignal {
  const controller = new AbortController();
  onShutdownSignal((signal) => controller.abort(signal));
  return controller.signal;
}

/** Runs `stop` once `signal` aborts, or at once when it already has. */
export function whenAborted(signal: AbortSignal, stop: () => void): void {
  if (signal.aborted) stop();
  else signal.addEventListener('abort', stop, { once: true });
}
