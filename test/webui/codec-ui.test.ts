import { randomBytes } from 'node:crypto';
import { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type { Page } from 'playwright-core';
import { loadConfig } from '../../src/config';
import {
  createOrdersRepository,
  createPaymentsRepository,
  createUnmatchedRepository,
} from '../../src/db';
import { buildApp } from '../../src/http/app';
import { createLogger } from '../../src/logger';
import { localHttpUrl } from '../../src/net/addresses';
import { orderWorkflowId } from '../../src/shared/order';
import type { PaymentWorkflowInput } from '../../src/shared/payment';
import { codecEndpointFor, dataConverterFor } from '../../src/codec/data-converter';
import { createPaymentStarter } from '../../src/temporal/payment-starter';
import { uniqueEventId } from '../support/webhook';
import { freePort } from '../operations/helpers';
import { UI_WAIT_MS } from '../support/browser';
import { createTestOrder } from '../support/orders';
import { startWebUiHarness, type WebUiHarness } from '../support/web-ui';

// With PAYLOAD_ENCRYPTION_KEY set the server holds ciphertext only, yet an operator reads a
// payment's input in clear in the Temporal Web UI: the UI posts the payloads to our HTTP
// server's /codec/decode (dev server flag --ui-codec-endpoint), which lets in the UI's origin
// only. Wired as `npm start` wires it (dev/stack.ts), on free ports, in a real browser.

/** What the codec writes in a payload's `encoding` metadata (src/codec/codec.ts). */
const ENCRYPTED_ENCODING = 'binary/encrypted';

/** A request our HTTP server answered, as it saw it. */
interface ServedRequest {
  method: string;
  url: string;
  origin: string | undefined;
  status: number;
}

let ui: WebUiHarness;
let app: FastifyInstance;
/** The Web UI's origin, the only one CODEC_CORS_ORIGINS allows. */
let uiOrigin: string;
/** What the dev server tells the UI to call, e.g. http://127.0.0.1:<port>/codec. */
let codecEndpoint: string;
const served: ServedRequest[] = [];
/** The payment every test looks at: paid once, encrypted, Completed. */
let payment: { workflowId: string; runId: string; input: PaymentWorkflowInput };

beforeAll(async () => {
  const uiPort = await freePort();
  const config = loadConfig({
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
    LOG_LEVEL: 'silent',
    PAYLOAD_ENCRYPTION_KEY: `k1:${randomBytes(32).toString('base64')}`,
    CODEC_CORS_ORIGINS: `http://127.0.0.1:${uiPort}`,
  });
  uiOrigin = config.CODEC_CORS_ORIGINS[0]!;
  // As dev/stack.ts: the UI asks our HTTP server to show encrypted payloads in clear.
  codecEndpoint = `${localHttpUrl(config.HOST, config.PORT)}/codec`;
  ui = await startWebUiHarness({
    name: 'codec-ui',
    uiPort,
    uiCodecEndpoint: codecEndpoint,
    dataConverter: dataConverterFor(config.PAYLOAD_ENCRYPTION_KEY),
  });
  expect(ui.uiUrl).toBe(uiOrigin);
  const { client, db } = ui;

  app = await buildApp({
    config,
    logger: createLogger(config),
    payments: createPaymentStarter(client, { startTimeoutMs: 10_000 }),
    unmatchedRepository: createUnmatchedRepository(db.db),
    ordersRepository: createOrdersRepository(db.db),
    paymentsRepository: createPaymentsRepository(db.db),
    codec: codecEndpointFor(config),
  });
  // Every request our server answers, seen from the socket: no hook inside the app needed.
  app.server.on('request', (request, response) => {
    response.once('finish', () =>
      served.push({
        method: request.method ?? '',
        url: request.url ?? '',
        origin: request.headers.origin,
        status: response.statusCode,
      }),
    );
  });
  await app.listen({ port: config.PORT, host: config.HOST });

  // One payment, run to completion with the encrypting data converter.
  const order = await createTestOrder(createOrdersRepository(db.db), {
    customerEmail: 'secret.buyer@example.com',
  });
  const input = { eventId: uniqueEventId('evt_codec'), orderId: order.id, amount: 5400 };
  const { workflowId } = await createPaymentStarter(client, { startTimeoutMs: 10_000 }).start(
    input,
  );
  await client.workflow.getHandle(workflowId).result();
  await client.workflow.getHandle(orderWorkflowId(order.id)).result();
  const { runId } = await client.workflow.getHandle(workflowId).describe();
  payment = { workflowId, runId, input };
}, 180_000);

afterAll(async () => {
  await app?.close();
  await ui?.close();
});

/** The started event's input payload exactly as the server stores it (read without a key). */
async function storedInputPayload() {
  const plainClient = new Client({ connection: ui.clientConnection, namespace: 'default' });
  const history = await plainClient.workflow.getHandle(payment.workflowId).fetchHistory();
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  const payloads = started?.input?.payloads ?? [];
  expect(payloads).toHaveLength(1);
  return payloads[0]!;
}

/**
 * Opens the payment's history page at `uiBase` and returns its Input card's code box (the UI
 * shows it above the event history: no click needed), once it shows `expected`.
 */
async function openInputCard(page: Page, uiBase: string, expected: string, shotName: string) {
  const workflowPath = `workflows/${encodeURIComponent(payment.workflowId)}/${payment.runId}/history`;
  await page.goto(`${uiBase}/namespaces/default/${workflowPath}`, {
    waitUntil: 'domcontentloaded',
  });
  // The code box nearest to the "Input" heading (the Result card has its own).
  const inputBox = page
    .getByRole('heading', { name: 'Input', exact: true })
    .locator('xpath=ancestor::*[.//*[@role="textbox"]][1]')
    .getByRole('textbox');
  try {
    await inputBox.getByText(expected).first().waitFor({ timeout: UI_WAIT_MS });
  } finally {
    await ui.browser.screenshot(page, shotName);
  }
  return inputBox;
}

describe('encrypted payloads in the Temporal Web UI (Chromium)', () => {
  it('stores the payment input encrypted: a client without the key sees ciphertext only', async () => {
    const stored = await storedInputPayload();
    expect(Buffer.from(stored.metadata!.encoding!).toString()).toBe(ENCRYPTED_ENCODING);
    const bytes = Buffer.from(stored.data!).toString('latin1');
    expect(bytes).not.toContain(payment.input.eventId);
    expect(bytes).not.toContain(`"orderId":${payment.input.orderId}`);
    expect(bytes).not.toContain('"amount":5400');
  });

  it('shows the input in clear on the payment page, decoded by our /codec/decode', async () => {
    const storedData = Buffer.from((await storedInputPayload()).data!).toString('base64');
    const page = await ui.browser.context.newPage();
    // The browser posts the very ciphertext the server stores to our endpoint and gets it
    // decoded: the clear text comes from our codec, not from anywhere else.
    const inputDecoded = page.waitForResponse(
      (response) =>
        response.url() === `${codecEndpoint}/decode` &&
        response.status() === 200 &&
        (response.request().postData() ?? '').includes(storedData),
      { timeout: UI_WAIT_MS },
    );
    // Awaited below; until then a failure of the page must not surface as an unhandled rejection.
    inputDecoded.catch(() => {});
    const inputBox = await openInputCard(
      page,
      uiOrigin,
      `"eventId": "${payment.input.eventId}"`,
      'codec-decoded',
    );
    expect(JSON.parse(await inputBox.innerText())).toEqual(payment.input);

    await inputDecoded;
    const fromUi = served.filter((r) => r.origin === uiOrigin);
    expect(fromUi.filter((r) => r.method === 'POST' && r.url === '/codec/decode')).not.toEqual([]);
    expect(fromUi.filter((r) => r.status !== 200 && r.status !== 204)).toEqual([]);
    await page.close();
  }, 60_000);

  it('shows ciphertext only when the UI is opened from an origin the codec endpoint does not allow', async () => {
    // The same UI at http://localhost:<port>: a different origin than CODEC_CORS_ORIGINS lists,
    // so the browser's CORS preflight fails and no payload ever reaches /codec/decode.
    const otherOrigin = uiOrigin.replace('127.0.0.1', 'localhost');
    const page = await ui.browser.context.newPage();
    const decodeRefused = page.waitForEvent('requestfailed', {
      predicate: (request) => request.url() === `${codecEndpoint}/decode`,
      timeout: UI_WAIT_MS,
    });
    decodeRefused.catch(() => {});
    const encodedEncoding = Buffer.from(ENCRYPTED_ENCODING).toString('base64');
    const inputBox = await openInputCard(
      page,
      otherOrigin,
      `"encoding": "${encodedEncoding}"`,
      'codec-refused',
    );
    // The UI says so, and falls back to the stored payload: key ID and ciphertext, nothing in clear.
    // (The navigation bar holds a hidden copy of the message: wait for the shown one.)
    await page
      .getByText('Codec Server could not connect')
      .filter({ visible: true })
      .first()
      .waitFor({ timeout: UI_WAIT_MS });
    const shown = JSON.parse(await inputBox.innerText()) as {
      metadata: Record<string, string>;
      data: string;
    };
    expect(shown.metadata.encoding).toBe(encodedEncoding);
    expect(shown.data).toBe(Buffer.from((await storedInputPayload()).data!).toString('base64'));
    expect(await inputBox.innerText()).not.toContain(payment.input.eventId);
    await decodeRefused;

    const fromOther = served.filter((r) => r.origin === otherOrigin);
    expect(fromOther.some((r) => r.method === 'OPTIONS')).toBe(true);
    expect(fromOther.filter((r) => r.method === 'POST')).toEqual([]);
    await page.close();
  }, 60_000);
});
