import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createDevServerEnv, type DevServerEnvOptions } from '../../harness/temporal/test-env';
import { startPaymentStack, type PaymentStack, type PaymentStackOptions } from './stack';

// The set-up most end-to-end tests share: a Temporal dev server, and the payment stack on it,
// for the tests of one file or describe block. Each registers its beforeAll and afterAll where
// it is called; what it started is read inside tests and hooks (reading it before the
// beforeAll ran is an error that says so).

/** Server start-ups, and the first start of a cold cache. */
const START_TIMEOUT_MS = 120_000;

export interface LiveDevServer {
  readonly env: TestWorkflowEnvironment;
}

export interface LivePaymentStack extends LiveDevServer {
  readonly stack: PaymentStack;
}

/** A dev server for these tests, torn down after them. */
export function devServerForTests(options: DevServerEnvOptions = {}): LiveDevServer {
  let env: TestWorkflowEnvironment | undefined;
  beforeAll(async () => {
    env = await createDevServerEnv(options);
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    await env?.teardown();
  });
  return {
    get env() {
      return started(env, 'devServerForTests');
    },
  };
}

/**
 * The payment stack (startPaymentStack) for these tests, on `server` when given (one a file
 * shares across describe blocks), otherwise on a dev server of its own with `serverOptions`,
 * started before the stack and torn down after it. `options` may be a function, read in the
 * beforeAll: for what is known only then, e.g. the URL of an alert sink started before.
 */
export function paymentStackForTests(
  options: PaymentStackOptions | (() => PaymentStackOptions) = {},
  server: LiveDevServer | { serverOptions: DevServerEnvOptions } = { serverOptions: {} },
): LivePaymentStack {
  let env: TestWorkflowEnvironment | undefined;
  let ownEnv: TestWorkflowEnvironment | undefined;
  let stack: PaymentStack | undefined;
  beforeAll(async () => {
    if ('serverOptions' in server) env = ownEnv = await createDevServerEnv(server.serverOptions);
    else env = server.env;
    stack = await startPaymentStack(env, typeof options === 'function' ? options() : options);
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    await stack?.close();
    await ownEnv?.teardown();
  });
  return {
    get env() {
      return started(env, 'paymentStackForTests');
    },
    get stack() {
      return started(stack, 'paymentStackForTests');
    },
  };
}

function started<T>(value: T | undefined, by: string): T {
  if (value === undefined) throw new Error(`${by}: read inside a test or hook, once started`);
  return value;
}
