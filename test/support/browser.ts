import sparticuz from '@sparticuz/chromium';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';

/**
 * A headless Chromium for the panel's browser tests, from the npm registry: `@sparticuz/chromium` ships the
 * binary inside its package (unpacked to the OS temp folder on first use), so `npm ci` is the whole set-up
 * and nothing is downloaded at test time. The machine's own browser, if any, is never used.
 */
export async function launchBrowser(): Promise<Browser> {
  const executablePath = await sparticuz.executablePath();
  // The closed network refuses Chromium's background connections; keep it from trying.
  return chromium.launch({ executablePath, headless: true, args: [...sparticuz.args, '--disable-background-networking'] });
}
