import sparticuz from '@sparticuz/chromium';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';

/**
 * A headless Chromium for the panel's browser tests, from the npm registry: `@sparticuz/chromium` ships the
 * binary inside its package (unpacked to the OS temp folder on first use), so `npm ci` is the whole set-up
 * and nothing is downloaded at test time. The machine's own browser, if any, is never used.
 */
export async function launchBrowser(options: { webSecurity?: boolean } = {}): Promise<Browser> {
  const executablePath = await sparticuz.executablePath();
  // @sparticuz/chromium's defaults turn the same-origin policy off (`--disable-web-security`); a test of
  // what a page on another site can do needs it on, as in the developer's own browser.
  const relaxed = new Set(['--disable-web-security', '--allow-running-insecure-content']);
  const args = options.webSecurity ? sparticuz.args.filter((a) => !relaxed.has(a)) : sparticuz.args;
  // The closed network refuses Chromium's background connections; keep it from trying.
  return chromium.launch({ executablePath, headless: true, args: [...args, '--disable-background-networking'] });
}
