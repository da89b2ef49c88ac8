import { runMain } from './process/run-main';
import { runWorkerProcess } from './workers/process';

/**
 * The payment worker (task queue `payments`), production entry: `node dist/worker.js` (or
 * `npm run worker`). Runs until SIGTERM / SIGINT. What it runs and which build it declares are
 * decided in src/workers/runtime.ts, as for every process that runs workers.
 */
runMain(() => runWorkerProcess('worker', 'payments'));
