import { Client, type Connection } from '@temporalio/client';
import { ConfigError, embeddedTemporalAddress, loadConfig, type Config } from '../config';
import { createDatabase, type DatabaseHandle } from '../db';
import { connectClient } from '../temporal/connection';
import { dataConverterFor } from '../codec/data-converter';
import { EXIT_PROBLEM } from './io';

/** For help texts: where the CLIs connect when TEMPORAL_ADDRESS is unset. */
export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:$TEMPORAL_DEV_PORT (7233)';
// A person waits for an answer at the terminal: fail within seconds when Temporal is down.
const CONNECT_TIMEOUT_MS = 5_000;

/** Problems go to `err` with what to do, and come back as exit code 1. */
export async function withTemporalClient(
  io: { err(text: string): void; env?: NodeJS.ProcessEnv },
  command: string,
  work: (client: Client) => Promise<number>,
  identity?: string,
): Promise<number> {
  const config = loadConfigOrReport(io);
  if (!config) return EXIT_PROBLEM;
  const address = config.TEMPORAL_ADDRESS ?? embeddedTemporalAddress(config);
  let connection: Connection;
  try {
    connection = await connectClient(config.temporalConnection, {
      address,
      timeoutMs: CONNECT_TIMEOUT_MS,
    });
  } catch (err) {
    const hint = config.TEMPORAL_ADDRESS
      ? 'npm run ops -- doctor checks the whole connection and says what to change'
      : 'set TEMPORAL_ADDRESS, or start the dev stack with npm start';
    io.err(`Cannot reach Temporal at ${address} (${errorMessage(err)}).\n${hint}.`);
    return EXIT_PROBLEM;
  }
  try {
    const client = new Client({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      dataConverter: dataConverterFor(config.PAYLOAD_ENCRYPTION_KEY),
      identity,
    });
    return await work(client);
  } catch (err) {
    io.err(`${command} failed: ${errorMessage(err)}`);
    return EXIT_PROBLEM;
  } finally {
    await connection.close();
  }
}

/** The message of anything thrown. Not `instanceof Error`: Node's own errors may come from another realm. */
export function errorMessage(err: unknown): string {
  const text = (err as { message?: unknown } | null)?.message;
  return typeof text === 'string' ? text : String(err);
}

/** The configuration, or undefined once the operator has been told what is wrong with it. */
export function loadConfigOrReport(io: {
  err(text: string): void;
  env?: NodeJS.ProcessEnv;
}): Config | undefined {
  try {
    return loadConfig(io.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.err(err.message);
    return undefined;
  }
}

/** The database of DATABASE_URL for `work`, closed after it; a bad configuration is exit code 1. */
export async function withDatabase(
  io: { err(text: string): void; env?: NodeJS.ProcessEnv },
  work: (db: DatabaseHandle['db'], config: Config) => Promise<number>,
): Promise<number> {
  const config = loadConfigOrReport(io);
  if (!config) return EXIT_PROBLEM;
  const database = createDatabase(config.DATABASE_URL);
  try {
    return await work(database.db, config);
  } finally {
    await database.close();
  }
}
