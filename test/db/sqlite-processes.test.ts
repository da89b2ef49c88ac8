import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { createOrdersRepository } from '../../src/db/repositories/orders';
import { createPaymentsRepository } from '../../src/db/repositories/payments';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';

const run = promisify(execFile);
const sqlite = testDatabases.find((d) => d.name === 'sqlite')!;

// What each child process does: open the file itself and record the same event many times at once.
const CHILD = `
const { createDatabase, createPaymentsRepository } = require(process.argv[1]);
(async () => {
  const handle = createDatabase(process.argv[2]);
  const input = JSON.parse(process.argv[3]);
  const repository = createPaymentsRepository(handle.db);
  const results = await Promise.all(Array.from({ length: 10 }, () => repository.recordPayment(input)));
  await handle.close();
  process.stdout.write(JSON.stringify(results.map((r) => r.kind)));
})();
`;

// The HTTP server and the worker may be separate processes on one SQLite file: each waits for
// the other's write lock (busy_timeout) instead of failing or writing twice.
describe('SQLite shared by several processes', () => {
  let handle: TestDatabaseHandle;
  beforeAll(async () => {
    handle = await sqlite.create();
  });
  afterAll(() => handle?.close());

  it('records one event exactly once when four processes race to record it', async () => {
    const { order } = await createOrdersRepository(handle.db).createWithIdempotencyKey({
      userId: 1,
      customerEmail: 'buyer@example.com',
      totalAmount: 900,
    });
    const input = {
      providerEventId: `evt_processes_${Date.now()}`,
      orderId: order.id,
      amount: 900,
    };
    const tsx = require.resolve('tsx/cjs');
    const dbModule = path.resolve(__dirname, '../../src/db/index.ts');

    const outputs = await Promise.all(
      Array.from({ length: 4 }, () =>
        run(process.execPath, [
          '--require',
          tsx,
          '-e',
          CHILD,
          dbModule,
          handle.url,
          JSON.stringify(input),
        ]),
      ),
    );

    const kinds = outputs.flatMap(({ stdout }) => JSON.parse(stdout) as string[]);
    expect(kinds).toHaveLength(40);
    expect(kinds.filter((k) => k === 'created')).toHaveLength(1);
    expect(kinds.filter((k) => k === 'existing')).toHaveLength(39);
    expect(await createPaymentsRepository(handle.db).countByEventId(input.providerEventId)).toBe(1);
  });
});
