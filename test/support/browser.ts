import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { findChromium } from './chromium';

// What the Web UI tests share: Chromium (npm's by default, see test/support/chromium.ts) driven
// by Playwright, with a profile and a screenshot folder of their own.

// Without the networking flags Chromium keeps calling Google services, which a closed network
// refuses, and the page loads would wait on them. Not @sparticuz/chromium's `args`: they turn
// off web security (CORS), which the codec test relies on.
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The UI reads visibility, which the server updates just after a workflow closes. */
export const UI_WAIT_MS = 30_000;

export interface TestBrowser {
  context: BrowserContext;
  /** Saves a screenshot (full page unless told) under this run's folder and prints where. */
  screenshot(page: Page, name: string, options?: { fullPage?: boolean }): Promise<string>;
  close(): Promise<void>;
}

let chromiumPath: Promise<string> | undefined;

/**
 * Fails with what to do when no Chromium runs here, before a test starts its servers, rather than
 * skipping the test. Global setup has usually found it already (CHROMIUM_PATH); when it could
 * not, this repeats the search so the error lands on the Web UI tests alone.
 */
export function assertChromium(): Promise<string> {
  chromiumPath ??= findChromium((line) => process.stderr.write(`${line}\n`));
  return chromiumPath;
}

export async function launchBrowser(name: string): Promise<TestBrowser> {
  const executablePath = await assertChromium();
  const profileDir = await mkdtemp(path.join(tmpdir(), 'order-payments-chromium-'));
  const screenshotDir = await mkdtemp(path.join(tmpdir(), `order-payments-${name}-`));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1600, height: 900 },
  });
  return {
    context,
    async screenshot(page, shotName, options = {}) {
      const file = path.join(screenshotDir, `${shotName}.png`);
      await page.screenshot({ path: file, fullPage: options.fullPage ?? true });
      process.stderr.write(`Web UI screenshot: ${file}\n`);
      return file;
    },
    async close() {
      await context.close();
      await rm(profileDir, { recursive: true, force: true });
    },
  };
}

/** The dev server of the tests must have its Web UI: the CLI, not the Java stand-in. */
export function requireUi(uiUrl: string | undefined): string {
  if (!uiUrl) {
    throw new Error(
      'The dev server has no Web UI (only the Java stand-in could be provisioned): see ' +
        'docs/temporal-servers.md for building the Temporal CLI.',
    );
  }
  return uiUrl;
}
