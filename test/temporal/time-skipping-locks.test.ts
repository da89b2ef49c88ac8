import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createTimeSkippingEnv } from '../../harness/temporal/test-env';
import { bundledWorker, workflowBundle } from '../support/bundles';

// The Java test server leaks a time-skipping lock for each child that closes after its parent
// (harness/temporal/time-skipping-locks.ts): without the harness's release, every later sleep
// runs on the wall clock, and the hour below would hang this test until jest stops it.
let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
});

afterAll(async () => {
  await env?.teardown();
});

it('skips time after a child closed after its parent', async () => {
  const bundle = await workflowBundle({
    workflowsPath: require.resolve('./fixtures/abandoned-child'),
    interceptorModules: [],
  });
  const worker = await bundledWorker(env, bundle, 'abandoned-child', {});
  await worker.runUntil(async () => {
    await env.client.workflow.execute('abandoningParent', {
      taskQueue: 'abandoned-child',
      workflowId: 'abandoning-parent',
    });
    // The child's minute is skipped, and it closes after its parent: the lock is leaked here.
    await env.client.workflow.getHandle('outliving-child').result();
    const before = await env.currentTimeMs();
    await env.sleep('1 hour');
    expect((await env.currentTimeMs()) - before).toBeGreaterThanOrEqual(60 * 60 * 1000);
  });
});
