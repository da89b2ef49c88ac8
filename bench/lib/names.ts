/** Task queue of the bench-only workflows (bench/workflows), served beside `payments`. */
export const BENCH_TASK_QUEUE = 'bench';

/** Path of the bare Fastify endpoint in the HTTP host: HTTP's own cost, nothing else. */
export const BARE_PATH = '/bare';
