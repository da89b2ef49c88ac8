import { runMain } from './process/run-main';
import { runWorkerProcess } from './workers/process';

// Runs the payments worker's bundle, so the same build (src/workers/runtime.ts).
runMain(() => runWorkerProcess('heavy-worker', 'heavy'));
