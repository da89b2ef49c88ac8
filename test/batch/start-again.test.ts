import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { type CliIo, EXIT_OK, EXIT_PROBLEM, main as ops } from '../../src/cli/ops';
import { eventually } from '../support/eventually';
import { devServerForTests } from '../support/dev-server-for-tests';
import { cliEnv as serverCliEnv } from '../operator/helpers';

// `npm run ops -- batch start` without --id, killed and run again, on a real dev server with no heavy
// worker: the export it started stays running, so the second start meets it.

const ROOT = path.resolve(__dirname, '../..');
const server = devServerForTests();

const cliEnv = () => serverCliEnv(server.env);

async function batch(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = { out: (t) => out.push(t), err: (t) => err.push(t), env: cliEnv() };
  const code = await ops(['batch', ...argv], io);
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

async function exportWorkflowIds(): Promise<string[]> {
  const ids: string[] = [];
  for await (const execution of server.env.client.workflow.list({
    query: "WorkflowType = 'exportOrdersWorkflow'",
  })) {
    ids.push(execution.workflowId);
  }
  return ids.sort();
}

it('start killed and run again finds the export it started instead of starting a second', async () => {
  const first = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/ops.ts',
      'batch',
      'start',
      '--from',
      '1',
      '--to',
      '500',
      '--watch',
    ],
    { cwd: ROOT, env: { ...process.env, ...cliEnv() }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const closed = once(first, 'close');
  let stdout = '';
  const workflowId = await new Promise<string>((resolve, reject) => {
    first.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const id = /^Workflow ID: (\S+)$/m.exec(stdout)?.[1];
      if (id) resolve(id);
    });
    void closed.then(() => reject(new Error(`batch start exited before starting: ${stdout}`)));
  });
  // Killed while it watches: the export runs on, the command that started it is gone.
  first.kill('SIGKILL');
  await closed;

  const again = await batch(['start', '--from', '1', '--to', '500']);
  expect(again).toMatchObject({ code: EXIT_OK, stderr: '' });
  expect(again.stdout).toContain(`was started before (${workflowId}`);
  expect(again.stdout).toContain(`npm run ops -- batch progress ${workflowId} --watch`);

  const ids = await eventually(async () => {
    const listed = await exportWorkflowIds();
    expect(listed).toContain(workflowId);
    return listed;
  });
  expect(ids).toEqual([workflowId]);
});

it('start of an export that has ended says how it ended and starts nothing', async () => {
  const started = await batch(['start', '--to', '10']);
  expect(started.code).toBe(EXIT_OK);
  const handle = server.env.client.workflow.getHandle('export-orders-first-10');
  const { runId } = await handle.describe();
  await handle.terminate('ended by the test');

  const again = await batch(['start', '--to', '10']);
  expect(again.code).toBe(EXIT_PROBLEM);
  expect(again.stdout).toContain('was started before (export-orders-first-10');
  expect(again.stdout).toContain('npm run ops -- batch start --id <EXPORT_ID>');
  expect(again.stderr).toContain('ended TERMINATED');
  expect((await handle.describe()).runId).toBe(runId);
});
