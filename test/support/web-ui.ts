import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection } from '@temporalio/worker';
import type { Page } from 'playwright-core';
import type { DatabaseHandle } from '../../src/db';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../../src/shared/search-attributes';
import { createPaymentWorker } from '../../src/workers/payments';
import { testActivityDeps } from '../../harness/activity-deps';
import { testDatabases } from '../../harness/databases';
import { freePort } from '../../harness/ports';
import { startDevServer, type DevServer } from '../../harness/temporal/dev-server';
import { assertChromium, launchBrowser, requireUi, type TestBrowser } from './browser';
import { startPartners, type Partners } from './stack';
import { runUntilStopped } from './workers';

// What the Web UI tests (test/webui) run, as `npm start` runs it: the dev server with its Web
// UI on a free port, the real payment worker on a SQLite database with local partners, a
// client, and Chromium.

export interface WebUiHarnessOptions {
  /** Names the browser's screenshot folder. */
  name: string;
  /** The Web UI's port (default: a free one). */
  uiPort?: number;
  /** Where the UI posts payloads to decode (the dev server's --ui-codec-endpoint). */
  uiCodecEndpoint?: string;
  /** The worker's and the client's; default: the SDK's, payloads in clear. */
  dataConverter?: DataConverter;
}

export interface WebUiHarness {
  server: DevServer;
  /** The Web UI's origin, e.g. http://127.0.0.1:<port>. */
  uiUrl: string;
  db: DatabaseHandle;
  partners: Partners;
  /** The client's own connection, for a second client (one without the data converter). */
  clientConnection: Connection;
  client: Client;
  browser: TestBrowser;
  /** Opens a page of the UI under the default namespace, e.g. `workflows/<id>/<run>/history`. */
  open(page: Page, path: string): Promise<void>;
  /** Stops all of it, browser first; safe after a start that failed halfway. */
  close(): Promise<void>;
}

export async function startWebUiHarness(options: WebUiHarnessOptions): Promise<WebUiHarness> {
  // Before any server starts: without Chromium, say what to do rather than time out later.
  await assertChromium();
  const { dataConverter } = options;
  const namespace = 'default';
  const stops: Array<() => Promise<unknown>> = [];
  const close = async () => {
    for (const stop of stops.reverse()) await stop();
  };
  try {
    const server = await startDevServer({
      port: await freePort(),
      uiPort: options.uiPort ?? (await freePort()),
      searchAttributes: [...CUSTOM_SEARCH_ATTRIBUTES],
      uiCodecEndpoint: options.uiCodecEndpoint,
      log: () => {},
    });
    stops.push(() => server.shutdown());
    const uiUrl = requireUi(server.uiUrl);
    const db = await testDatabases[0]!.create();
    stops.push(() => db.close());
    const partners = await startPartners();
    stops.push(() => partners.close());
    const workerConnection = await NativeConnection.connect({ address: server.address });
    stops.push(() => workerConnection.close());
    const worker = await createPaymentWorker({
      connection: workerConnection,
      namespace,
      dataConverter,
      activities: testActivityDeps(db, partners),
    });
    stops.push(runUntilStopped(worker).stop);
    const clientConnection = await Connection.connect({ address: server.address });
    stops.push(() => clientConnection.close());
    const client = new Client({ connection: clientConnection, namespace, dataConverter });
    const browser = await launchBrowser(options.name);
    stops.push(() => browser.close());
    const open = async (page: Page, path: string) => {
      await page.goto(`${uiUrl}/namespaces/${namespace}/${path}`, {
        waitUntil: 'domcontentloaded',
      });
    };
    return { server, uiUrl, db, partners, clientConnection, client, browser, open, close };
  } catch (error) {
    await close();
    throw error;
  }
}
