/**
 * Pages of the web console for the benchmark's console rows: a fresh browser context (an empty
 * cache, its own sessionStorage) already signed in, as the console keeps a token (sessionStorage
 * `tws.token`, console/src/token-store.ts), so a navigation times what the console does, not typing.
 */
import type { Browser, Page } from 'playwright-core';

export async function signedInPage(browser: Browser, baseURL: string, token: string): Promise<Page> {
  const context = await browser.newContext({ baseURL, viewport: { width: 1400, height: 900 } });
  await context.addInitScript({ content: `sessionStorage.setItem('tws.token', ${JSON.stringify(token)})` });
  const page = await context.newPage();
  page.on('pageerror', (err) => console.error(`[console page] ${err.message}`));
  return page;
}

/** Milliseconds from `start` (performance.now of this process) until `done` resolves. */
export async function timed(done: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await done();
  return performance.now() - start;
}
