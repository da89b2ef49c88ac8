import { TestWorkflowEnvironment } from '@temporalio/testing';
import { startDevServer } from '../../harness/temporal/dev-server';

// Where the SDK's own download works (a machine with internet), the SDK runs the dev server and
// startDevServer must hand it every setting npm start relies on. This machine has no internet,
// so the route is checked at the boundary: the options given to TestWorkflowEnvironment.
jest.mock('../../harness/temporal/provision', () => ({
  devServerExecutable: () => Promise.resolve({ type: 'cached-download' }),
}));

describe('startDevServer on the SDK-downloaded server', () => {
  afterEach(() => jest.restoreAllMocks());

  it('passes the Web UI codec endpoint, persistence and namespace on', async () => {
    const teardown = jest.fn(() => Promise.resolve());
    const createLocal = jest.spyOn(TestWorkflowEnvironment, 'createLocal').mockResolvedValue({
      address: '127.0.0.1:7401',
      teardown,
    } as unknown as TestWorkflowEnvironment);

    const server = await startDevServer({
      port: 0,
      uiPort: 0,
      dbFilename: `${__dirname}/../../data/never-written.db`,
      namespace: 'orders-dev',
      uiCodecEndpoint: 'http://127.0.0.1:3000/codec',
      log: () => {},
    });
    await server.shutdown();
    await server.shutdown();

    expect(createLocal).toHaveBeenCalledTimes(1);
    expect(createLocal.mock.calls[0]![0]).toMatchObject({
      server: {
        ui: true,
        namespace: 'orders-dev',
        dbFilename: expect.stringContaining('never-written.db'),
        extraArgs: ['--ui-codec-endpoint', 'http://127.0.0.1:3000/codec'],
      },
    });
    expect(server.address).toBe('127.0.0.1:7401');
    expect(teardown).toHaveBeenCalledTimes(1);
  });

  it('adds no codec flag when payloads are not encrypted', async () => {
    const createLocal = jest.spyOn(TestWorkflowEnvironment, 'createLocal').mockResolvedValue({
      address: '127.0.0.1:7401',
      teardown: () => Promise.resolve(),
    } as unknown as TestWorkflowEnvironment);
    await startDevServer({ port: 0, uiPort: 0, log: () => {} });
    expect(createLocal.mock.calls[0]![0]).toMatchObject({ server: { extraArgs: [] } });
  });
});
