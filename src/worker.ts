import { runMain } from './process/run-main';
import { runWorkerProcess } from './workers/process';

// What it runs and which build it declares: src/workers/runtime.ts, as for every process.
runMain(() => runWorkerProcess('worker', 'payments'));
