import fs from 'node:fs/promises';
import { spawn } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { SearchAttributeType, defineSearchAttributeKey } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { CommandRunner, ProvisionContext } from '../../harness/provision/cache';
import { startDevServer } from '../../harness/temporal/dev-server';
import {
  CLI_PATH_ENV,
  TEMPORAL_CLI_VERSION,
  TEST_SERVER_PATH_ENV,
  TEST_SERVER_VERSION,
  defaultContext,
  devServerExecutable,
  provisionServer,
  testServerExecutable,
} from '../../harness/temporal/provision';
import { createDevServerEnv, createTimeSkippingEnv } from '../../harness/temporal/test-env';
import { freePort, portIsFree } from '../../harness/ports';
import { eventually } from '../operations/helpers';
import { tempDirsForTests } from '../support/temp-dirs';

const DAY_MS = 24 * 60 * 60 * 1000;

// Server start-ups and, on a machine with a cold cache, the Maven resolve of the test server.
jest.setTimeout(180_000);

const tempDir = tempDirsForTests('provision-test-');

/** The project-built Java test server folder, from the real user cache (built once if missing). */
async function javaTestServerDir(): Promise<string> {
  const context = defaultContext({
    sdkDownloadWorks: () => Promise.resolve(false),
    env: withoutOverrides(),
  });
  const wrapper = await provisionServer('test-server', context);
  return path.dirname(wrapper!);
}

function withoutOverrides(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env[CLI_PATH_ENV];
  delete env[TEST_SERVER_PATH_ENV];
  return env;
}

describe('time-skipping test server', () => {
  it('runs from the project-built Java test server and skips a day of env.sleep in seconds', async () => {
    const wrapper = path.join(await javaTestServerDir(), 'temporal-test-server.sh');
    const env = await TestWorkflowEnvironment.createTimeSkipping({
      server: { executable: { type: 'existing-path', path: wrapper } },
    });
    try {
      const serverTimeBefore = await env.currentTimeMs();
      const started = Date.now();
      await env.sleep('1 day');
      expect(Date.now() - started).toBeLessThan(5_000);
      expect((await env.currentTimeMs()) - serverTimeBefore).toBeGreaterThanOrEqual(DAY_MS);
    } finally {
      await env.teardown();
    }
  });

  it('is what createTimeSkippingEnv starts', async () => {
    const env = await createTimeSkippingEnv();
    try {
      expect(env.supportsTimeSkipping).toBe(true);
      const started = Date.now();
      await env.sleep('1 day');
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await env.teardown();
    }
  });
});

describe('dev server', () => {
  it('createDevServerEnv starts a real server that answers and has its namespace', async () => {
    const env = await createDevServerEnv({ namespace: 'provision-test' });
    try {
      const info = await env.connection.workflowService.getSystemInfo({});
      expect(info.capabilities).toBeTruthy();
      const described = await env.connection.workflowService.describeNamespace({
        namespace: 'provision-test',
      });
      expect(described.namespaceInfo?.name).toBe('provision-test');
    } finally {
      await env.teardown();
    }
  });

  it('falls back to the Java stand-in, which speaks the CLI command line the SDK uses', async () => {
    const standIn = path.join(await javaTestServerDir(), 'temporal-dev-server.sh');
    const env = await TestWorkflowEnvironment.createLocal({
      server: { executable: { type: 'existing-path', path: standIn } },
    });
    try {
      const info = await env.connection.workflowService.getSystemInfo({});
      expect(info.capabilities).toBeTruthy();
      expect(env.supportsTimeSkipping).toBe(false);
    } finally {
      await env.teardown();
    }
  });

  describe('startDevServer', () => {
    it('persists to its file, serves the Web UI, registers search attributes, and stops on shutdown', async () => {
      const [port, uiPort] = [await freePort(), await freePort()];
      const dbFilename = path.join(await tempDir(), 'nested', 'temporal.db');
      const lines: string[] = [];
      const server = await startDevServer({
        port,
        uiPort,
        dbFilename,
        namespace: 'orders-dev',
        searchAttributes: [defineSearchAttributeKey('OrderId', SearchAttributeType.KEYWORD)],
        log: (line) => lines.push(line),
      });
      try {
        expect(server.address).toBe(`127.0.0.1:${port}`);
        const connection = await Connection.connect({ address: server.address });
        const described = await connection.workflowService.describeNamespace({
          namespace: 'orders-dev',
        });
        expect(described.namespaceInfo?.name).toBe('orders-dev');
        const attributes = await connection.operatorService.listSearchAttributes({
          namespace: 'orders-dev',
        });
        expect(attributes.customAttributes.OrderId).toBeDefined();
        await connection.close();

        expect(server.uiUrl).toBe(`http://127.0.0.1:${uiPort}`);
        const ui = await fetch(server.uiUrl!);
        expect(ui.status).toBe(200);
        expect((await fs.stat(dbFilename)).size).toBeGreaterThan(0);
        expect(lines.join('\n')).toMatch(/^Starting temporal version /m);
      } finally {
        await server.shutdown();
      }
      // The port is free again: the child process is gone, not just disconnected.
      expect(await portIsFree(port)).toBe(true);

      // Restarted on the same file, it still knows what the first run registered.
      const restarted = await startDevServer({ port, uiPort, dbFilename, log: () => {} });
      try {
        const connection = await Connection.connect({ address: restarted.address });
        const described = await connection.workflowService.describeNamespace({
          namespace: 'orders-dev',
        });
        expect(described.namespaceInfo?.name).toBe('orders-dev');
        await connection.close();
      } finally {
        await restarted.shutdown();
      }
    });

    it('stops the server when the process that started it is killed (kill -9): no port left taken', async () => {
      const [port, uiPort] = [await freePort(), await freePort()];
      const holder = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          path.join(__dirname, 'fixtures', 'dev-server-holder.ts'),
          `${port}`,
          `${uiPort}`,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let output = '';
      holder.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      holder.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<void>((resolve) => holder.once('exit', () => resolve()));
      try {
        await eventually(() => expect(output).toContain(`ready 127.0.0.1:${port}`), {
          timeoutMs: 60_000,
        });
        expect(await portIsFree(port)).toBe(false);
      } finally {
        holder.kill('SIGKILL');
        await exited;
      }
      // Nothing of the holder ran after the kill: the watchdog alone frees the ports.
      await eventually(
        async () => {
          expect(await portIsFree(port)).toBe(true);
          expect(await portIsFree(uiPort)).toBe(true);
        },
        { timeoutMs: 20_000 },
      );
    });

    it('reports a crash of the server (crashed), but not its own shutdown', async () => {
      const crashing = await startDevServer({
        port: await freePort(),
        uiPort: await freePort(),
        log: () => {},
      });
      process.kill(crashing.pid!, 'SIGKILL');
      await expect(crashing.crashed).resolves.toContain('(exited with SIGKILL)');
      await crashing.shutdown();

      const stopped = await startDevServer({
        port: await freePort(),
        uiPort: await freePort(),
        log: () => {},
      });
      await stopped.shutdown();
      const outcome = await Promise.race([
        stopped.crashed.then(() => 'crashed'),
        delay(100).then(() => 'still quiet'),
      ]);
      expect(outcome).toBe('still quiet');
    });

    it('says clearly when its port is already in use', async () => {
      const squatter = net.createServer();
      await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
      const { port } = squatter.address() as net.AddressInfo;
      try {
        await expect(
          startDevServer({ port, uiPort: await freePort(), log: () => {} }),
        ).rejects.toThrow(new RegExp(`port ${port} on 127.0.0.1 is already in use`));
      } finally {
        await new Promise<void>((resolve) => squatter.close(() => resolve()));
      }
    });

    it('reports no Web UI when the Java stand-in is the dev server', async () => {
      const standIn = path.join(await javaTestServerDir(), 'temporal-dev-server.sh');
      const saved = process.env[CLI_PATH_ENV];
      process.env[CLI_PATH_ENV] = standIn;
      const lines: string[] = [];
      try {
        const server = await startDevServer({
          port: await freePort(),
          uiPort: await freePort(),
          log: (line) => lines.push(line),
        });
        await server.shutdown();
        expect(server.uiUrl).toBeUndefined();
        expect(lines.join('\n')).toMatch(/no Web UI/);
      } finally {
        restoreEnv(CLI_PATH_ENV, saved);
      }
    });
  });
});

describe('provisioning', () => {
  /** Stands in for go, mvn, java and the built CLI, recording every call. */
  function fakeToolchain(options: { goExitCode?: number; delayMs?: number } = {}) {
    const calls: string[] = [];
    const run: CommandRunner = async (command, args, { env, onLine }) => {
      const tool = path.basename(command);
      calls.push(tool);
      onLine?.(`${tool} is working`);
      await delay(options.delayMs ?? 0);
      if (tool === 'go') {
        if (options.goExitCode)
          return { code: options.goExitCode, output: 'go: module lookup failed' };
        await fs.mkdir(env.GOBIN!, { recursive: true });
        await fs.writeFile(path.join(env.GOBIN!, 'temporal'), '#!/bin/sh\n', { mode: 0o755 });
        return { code: 0, output: '' };
      }
      if (tool === 'mvn') {
        const lib = args.find((a) => a.startsWith('-DoutputDirectory='))!.split('=')[1]!;
        await fs.mkdir(lib, { recursive: true });
        await fs.writeFile(path.join(lib, `temporal-test-server-${TEST_SERVER_VERSION}.jar`), '');
        return { code: 0, output: '' };
      }
      if (tool === 'temporal')
        return { code: 0, output: `temporal version ${TEMPORAL_CLI_VERSION}` };
      return { code: 0, output: 'openjdk version "17"' };
    };
    return { run, calls };
  }

  async function offlineContext(
    overrides: Partial<ProvisionContext> = {},
  ): Promise<ProvisionContext> {
    return defaultContext({
      cacheDir: await tempDir(),
      env: withoutOverrides(),
      log: () => {},
      sdkDownloadWorks: () => Promise.resolve(false),
      ...overrides,
    });
  }

  it('uses the executables named by the environment variables without provisioning anything', async () => {
    const fake = path.join(await tempDir(), 'temporal');
    await fs.writeFile(fake, '#!/bin/sh\n', { mode: 0o755 });
    const nothingElse = () => Promise.reject(new Error('must not be called'));
    const context = await offlineContext({
      env: { ...withoutOverrides(), [CLI_PATH_ENV]: fake, [TEST_SERVER_PATH_ENV]: fake },
      run: nothingElse,
      sdkDownloadWorks: nothingElse,
    });
    await expect(provisionServer('dev-server', context)).resolves.toBe(fake);
    await expect(provisionServer('test-server', context)).resolves.toBe(fake);

    const saved = [process.env[CLI_PATH_ENV], process.env[TEST_SERVER_PATH_ENV]] as const;
    process.env[CLI_PATH_ENV] = fake;
    process.env[TEST_SERVER_PATH_ENV] = fake;
    try {
      await expect(devServerExecutable()).resolves.toEqual({ type: 'existing-path', path: fake });
      await expect(testServerExecutable()).resolves.toEqual({ type: 'existing-path', path: fake });
    } finally {
      restoreEnv(CLI_PATH_ENV, saved[0]);
      restoreEnv(TEST_SERVER_PATH_ENV, saved[1]);
    }
  });

  it('rejects an environment variable that names no executable, naming the variable', async () => {
    const context = await offlineContext({
      env: { ...withoutOverrides(), [CLI_PATH_ENV]: '/nonexistent/temporal' },
    });
    await expect(provisionServer('dev-server', context)).rejects.toThrow(
      `${CLI_PATH_ENV} is set to /nonexistent/temporal`,
    );
  });

  it('leaves the path undefined and builds nothing when the SDK download works', async () => {
    const { run, calls } = fakeToolchain();
    const context = await offlineContext({ run, sdkDownloadWorks: () => Promise.resolve(true) });
    await expect(provisionServer('dev-server', context)).resolves.toBeUndefined();
    await expect(provisionServer('test-server', context)).resolves.toBeUndefined();
    expect(calls).toEqual([]);
  });

  it('builds each server once into the cache and reuses it without running go or mvn again', async () => {
    const { run, calls } = fakeToolchain();
    const context = await offlineContext({ run });
    const dev = await provisionServer('dev-server', context);
    const test = await provisionServer('test-server', context);
    expect(calls.sort()).toEqual(['go', 'java', 'mvn', 'temporal']);
    expect(dev).toMatch(new RegExp(`temporal-cli-${TEMPORAL_CLI_VERSION}-\\w+/bin/temporal$`));
    expect(test).toMatch(
      new RegExp(`temporal-test-server-${TEST_SERVER_VERSION}-\\w+/temporal-test-server.sh$`),
    );

    calls.length = 0;
    // A fresh context on the same cache: another process, or a later fresh clone.
    const later = await offlineContext({ run, cacheDir: context.cacheDir });
    await expect(provisionServer('dev-server', later)).resolves.toBe(dev);
    await expect(provisionServer('test-server', later)).resolves.toBe(test);
    expect(calls).toEqual([]);
  });

  it('leaves no partial cache when a build fails, and falls back to the Java stand-in', async () => {
    const lines: string[] = [];
    const context = await offlineContext({
      run: fakeToolchain({ goExitCode: 1 }).run,
      log: (l) => lines.push(l),
    });
    const dev = await provisionServer('dev-server', context);
    expect(dev).toMatch(/temporal-test-server-[^/]+\/temporal-dev-server\.sh$/);
    expect(lines.join('\n')).toMatch(
      /go install failed with exit code 1:\ngo: module lookup failed/,
    );
    expect(lines.join('\n')).toMatch(/no Web UI/);
    const entries = await fs.readdir(context.cacheDir);
    expect(entries.filter((e) => e.startsWith('temporal-cli'))).toEqual([]);
  });

  it('builds once when two callers ask at the same time', async () => {
    const { run, calls } = fakeToolchain({ delayMs: 300 });
    const context = await offlineContext({ run });
    const other = { ...context };
    const [first, second] = await Promise.all([
      provisionServer('test-server', context),
      provisionServer('test-server', other),
    ]);
    expect(second).toBe(first);
    expect(calls.filter((c) => c === 'mvn')).toHaveLength(1);
  });

  it("takes over a killed build's lock and temporary folder", async () => {
    const { run, calls } = fakeToolchain();
    const context = await offlineContext({ run });
    const dir = path.dirname((await provisionServer('test-server', context))!);
    // Simulate a build killed halfway: no final folder, its lock and temporary folder left behind.
    const deadPid = 2 ** 22 + 1;
    await fs.rm(dir, { recursive: true });
    // Its lock is no longer refreshed: older than the stale age (20 s), it is taken over.
    await fs.mkdir(`${dir}.lock`);
    const lastRefresh = new Date(Date.now() - 60_000);
    await fs.utimes(`${dir}.lock`, lastRefresh, lastRefresh);
    const leftover = `${dir}.tmp-${os.hostname()}-${deadPid}-abcd`;
    await fs.mkdir(leftover);
    calls.length = 0;

    await expect(provisionServer('test-server', context)).resolves.toBe(
      path.join(dir, 'temporal-test-server.sh'),
    );
    expect(calls).toContain('mvn');
    const entries = await fs.readdir(context.cacheDir);
    expect(entries.filter((e) => e.includes('.tmp-') || e.endsWith('.lock'))).toEqual([]);
  });

  it('reports progress while a build runs', async () => {
    const lines: string[] = [];
    const context = await offlineContext({
      run: fakeToolchain({ delayMs: 200 }).run,
      log: (l) => lines.push(l),
      progressIntervalMs: 50,
    });
    await provisionServer('test-server', context);
    expect(lines.some((l) => /^still building… \d+s/.test(l))).toBe(true);
  });
});

function restoreEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}
