import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { setTimeout as delay } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../../src/shared/search-attributes';
import { devServerExecutable } from '../../harness/temporal/provision';

/**
 * The Temporal CLI dev server, run by the chaos driver itself (not through startDevServer, which
 * owns its process and stops it politely): the driver must SIGKILL it and start it again on the
 * same port with the same SQLite file, as a crashed server that its supervisor restarts.
 */

/** The provisioned CLI binary; refuses stand-ins that cannot keep workflows across a restart. */
export async function temporalCliPath(log: (line: string) => void): Promise<string> {
  const executable = await devServerExecutable({ log });
  if (executable.type !== 'existing-path') {
    throw new Error(
      'The chaos run starts the Temporal CLI itself and needs its path: run `npm run provision` ' +
        'and set TEMPORAL_CLI_PATH to the dev server it prints.',
    );
  }
  const { stdout } = await promisify(execFile)(executable.path, ['--version'], { timeout: 30_000 });
  if (!stdout.startsWith('temporal version ')) {
    throw new Error(
      `${executable.path} is not the Temporal CLI (${stdout.trim()}): the Java stand-in keeps ` +
        'nothing on disk, so a server restart would lose every workflow. See docs/temporal-servers.md.',
    );
  }
  return executable.path;
}

/** Arguments of `temporal server start-dev` with file persistence and no Web UI. */
export function devServerArgs(options: {
  port: number;
  dbFile: string;
  namespace: string;
}): string[] {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(options.port)];
  args.push('--headless', '--db-filename', options.dbFile, '--namespace', options.namespace);
  // WAL with synchronous=NORMAL: a commit is in the WAL file (the OS's page cache) before it is
  // acknowledged, so it survives a SIGKILL of the server, which is all this run does to it; only
  // a power cut could lose the last commits. The default (rollback journal, FULL) syncs the disk
  // several times per write and cannot keep up with hundreds of workflows on a small machine.
  args.push('--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=normal');
  args.push('--log-format', 'text', '--log-level', 'warn');
  // Offline machines: no call home on every start.
  args.push('--dynamic-config-value', 'frontend.enableServerVersionCheck=false');
  // As harness/temporal/dev-server.ts runs it: eager activity dispatch, so crashes hit that path too.
  args.push('--dynamic-config-value', 'system.enableActivityEagerExecution=true');
  for (const key of CUSTOM_SEARCH_ATTRIBUTES) {
    args.push(
      '--search-attribute',
      `${key.name}=${TypedSearchAttributes.toMetadataType(key.type)}`,
    );
  }
  return args;
}

/** Waits until the server answers and the namespace exists (it is created just after start). */
export async function waitForTemporal(
  address: string,
  namespace: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        await connection.workflowService.describeNamespace({ namespace });
        return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      lastError = error;
    }
    await delay(200);
  }
  throw new Error(
    `Temporal did not answer at ${address} within ${timeoutMs / 1000}s: ${
      lastError instanceof Error ? lastError.message : String(lastError)
    }`,
  );
}
