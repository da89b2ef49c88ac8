import { runMain } from './process/run-main';
import { runWorkerProcess } from './workers/process';

/**
 * The heavy worker (task queue `heavy`: invoices, exports, the stock aggregation), production
 * entry: `node dist/heavy-worker.js` (or `npm run heavy-worker`). It runs the payments worker's
 * bundle, so the same build (src/workers/runtime.ts).
 */
runMain(() => runWorkerProcess('heavy-worker', 'heavy'));
