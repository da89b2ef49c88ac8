import { randomBytes, randomUUID } from 'node:crypto';
import { Client, WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { EXIT_OK, EXIT_PROBLEM, EXIT_STUCK, main } from '../../src/cli/ops';
import { dataConverterFor } from '../../src/codec/data-converter';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { captureIo, cliEnv, eventually, runTestWorkflows } from './helpers';
import { createStepActivities } from './step-activities';
import { badDeployWorkflow, impatientShipmentWorkflow, invalidInputWorkflow } from './workflows';

// One process wrote payloads with an encryption key ("k2") that the operator's CLI does not
// have (it runs with "k1" only). Such a workflow must be shown as undecodable, and must not hide
// the others: every listing goes on, and exits 0.
const k1 = `k1:${randomBytes(32).toString('base64')}`;
const k2 = `k2:${randomBytes(32).toString('base64')}`;
const UNDECODABLE =
  'its payloads cannot be decoded with the configured key(s): they were encrypted with key "k2", ' +
  'which PAYLOAD_ENCRYPTION_KEY does not hold';

let env: TestWorkflowEnvironment;
let k2Client: Client;
const workers: { close(): Promise<void> }[] = [];
/** A worker without encryption, like the other operator tests, and one with key k2. */
let plainQueue: string;
let k2Queue: string;

async function startWorker(payloadEncryptionKey: string | undefined): Promise<string> {
  const worker = await runTestWorkflows(env, createStepActivities().activities, {
    dataConverter: dataConverterFor(payloadEncryptionKey),
  });
  workers.push(worker);
  return worker.taskQueue;
}

beforeAll(async () => {
  env = await createDevServerEnv();
  k2Client = new Client({
    connection: env.connection,
    namespace: env.namespace ?? 'default',
    dataConverter: dataConverterFor(k2),
  });
  plainQueue = await startWorker(undefined);
  k2Queue = await startWorker(k2);
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.close()));
  await env?.teardown();
});

const cli = () => captureIo({ env: { ...cliEnv(env), PAYLOAD_ENCRYPTION_KEY: k1 } });
const lineOf = (stdout: string, id: string) => stdout.split('\n').find((l) => l.startsWith(id));
/** `ops stuck` lists each run as a row of its cause's table, indented under the group. */
const rowOf = (stdout: string, id: string) => stdout.split('\n').find((l) => l.includes(` ${id} `));

async function failedWorkflow(client: Client, taskQueue: string, orderId: number) {
  const handle = await client.workflow.start(invalidInputWorkflow, {
    taskQueue,
    workflowId: `undecodable-failed-${orderId}-${randomUUID()}`,
    memo: { orderId },
  });
  await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
  return handle.workflowId;
}

it('failed and retry all list every failed workflow, and the undecodable one on a line of its own', async () => {
  const readable = await failedWorkflow(env.client, plainQueue, 101);
  const undecodable = await failedWorkflow(k2Client, k2Queue, 102);

  const io = await eventually(async () => {
    const io = cli();
    expect(await main(['failed'], io)).toBe(EXIT_OK);
    expect(lineOf(io.stdout(), undecodable)).toBeDefined();
    return io;
  });
  expect(io.stderr()).toBe('');
  expect(lineOf(io.stdout(), readable)).toMatch(
    / invalidInputWorkflow +101 +InvalidInput: the input is invalid /,
  );
  // The failure is read (failure messages are not encrypted); the memo's order ID is not.
  expect(lineOf(io.stdout(), undecodable)).toMatch(
    / invalidInputWorkflow +\? +InvalidInput: the input is invalid /,
  );
  expect(io.stdout()).toContain(`  ${undecodable} (invalidInputWorkflow): ${UNDECODABLE}`);
  expect(io.stdout()).toContain('2 failed workflow(s).');

  // Both are retried; their input is invalid, so both new runs fail again, and say so (exit 1).
  const retry = cli();
  expect(await main(['retry', 'all', '--type', 'invalidInputWorkflow'], retry)).toBe(EXIT_PROBLEM);
  expect(retry.stderr()).toBe('');
  expect(lineOf(retry.stdout(), readable)).toMatch(/ failed again +new run \S+: .*InvalidInput/);
  expect(lineOf(retry.stdout(), undecodable)).toMatch(/ failed again +new run \S+: .*InvalidInput/);
  expect(retry.stdout()).toContain(`  ${undecodable} (invalidInputWorkflow): ${UNDECODABLE}`);
  expect(retry.stdout()).toContain(
    'Retried 2 (done 0, running 0, failed again 2, did nothing 0), skipped 0, refused 0, errors 0.',
  );
});

it('stuck lists the other stuck workflows, and the undecodable one', async () => {
  const badDeploy = await env.client.workflow.start(badDeployWorkflow, {
    taskQueue: plainQueue,
    workflowId: `undecodable-bad-deploy-${randomUUID()}`,
  });
  // Its input is encrypted with k2, which the worker lacks: its workflow task keeps failing.
  const undecodable = await k2Client.workflow.start(impatientShipmentWorkflow, {
    taskQueue: plainQueue,
    workflowId: `undecodable-stuck-${randomUUID()}`,
    args: [{ orderId: 103 }],
    memo: { orderId: 103 },
  });

  const io = await eventually(async () => {
    const io = cli();
    expect(await main(['stuck'], io)).toBe(EXIT_STUCK);
    expect(rowOf(io.stdout(), badDeploy.workflowId)).toContain('retrying (the code throws)');
    expect(rowOf(io.stdout(), undecodable.workflowId)).toContain('retrying (the code throws)');
    return io;
  });
  expect(io.stderr()).toBe('');
  // Grouped by cause: the group's header names the failing workflow task.
  expect(io.stdout()).toContain('workflow task failing with');
  expect(io.stdout()).toContain(
    `  ${undecodable.workflowId} (impatientShipmentWorkflow): ${UNDECODABLE}`,
  );

  // Filtered to the other type, the undecodable workflow is not listed, and nothing is hidden.
  const filtered = cli();
  expect(await main(['stuck', '--type', 'badDeployWorkflow'], filtered)).toBe(EXIT_STUCK);
  expect(rowOf(filtered.stdout(), badDeploy.workflowId)).toContain('retrying (the code throws)');
  expect(filtered.stdout()).not.toContain(undecodable.workflowId);
});
