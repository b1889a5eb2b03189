import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

/** Debian's `chromium` package (`apt-get install chromium`); `CHROMIUM_PATH` points elsewhere. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** Whether the browser tests can run here. */
export const chromiumAvailable = existsSync(CHROMIUM_PATH);

/** Quiet, offline, throw-away: no sync, no updates, no first-run UI, no background traffic. */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A headless Chromium with a fresh profile of its own; `close` also deletes the profile. */
export interface HeadlessChromium {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/** Launches the system's Chromium through playwright-core (no browser download), with a fresh `--user-data-dir`. */
export async function launchChromium(): Promise<HeadlessChromium> {
  const profile = mkdtempSync(join(tmpdir(), 'ndl-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: FLAGS,
    viewport: { width: 1200, height: 1100 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
