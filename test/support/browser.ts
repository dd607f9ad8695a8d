/**
 * A real browser for the console's tests: Debian's headless Chromium (scripts/setup.sh installs
 * it) driven by playwright-core, which downloads no browser of its own. One browser per test file
 * (a Chromium is ~150 MB and a second of CPU to start; two cores run three files at once), one
 * context per page, so that pages share no sessionStorage; all of it closed after the file.
 *
 * Each page records what a person would not see but a test must: console errors, uncaught page
 * errors, every dialog (an `alert` is a failure: the XSS tests' payloads call it), and the URL of
 * every request the page made (an `<img src=x>` that ran would ask for `x`).
 */
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, expect } from 'vitest';
import { launchChromium } from './chromium';

export interface WatchedPage {
  page: Page;
  context: BrowserContext;
  /** `console.error` lines and failed loads the page reported. */
  consoleErrors: string[];
  /** Exceptions the page's scripts threw and did not catch. */
  pageErrors: string[];
  /** Every dialog the page opened (`alert: 1`), dismissed at once. */
  dialogs: string[];
  /** The URL of every request the page made, in order. */
  requests: string[];
}

/**
 * The browser of a test file, started on the first page it opens. After each test its pages are
 * closed, and the test fails if one of them opened a dialog or threw; after the file the browser ends.
 */
export function browserPerFile() {
  let browser: Promise<Browser> | null = null;
  let open: WatchedPage[] = [];

  afterEach(async () => {
    const pages = open;
    open = [];
    for (const p of pages) await p.context.close().catch(() => {});
    for (const p of pages) {
      expect(p.dialogs, 'dialogs the page opened').toEqual([]);
      expect(p.pageErrors, 'errors the page threw').toEqual([]);
    }
  });
  afterAll(async () => {
    if (browser) await (await browser).close();
    browser = null;
  });

  return {
    /** A new page (of a context of its own), watched; `baseURL` resolves `page.goto('/…')`. */
    async page(baseURL: string): Promise<WatchedPage> {
      browser ??= launchChromium();
      const context = await (await browser).newContext({ baseURL });
      const page = await context.newPage();
      const watched: WatchedPage = { page, context, consoleErrors: [], pageErrors: [], dialogs: [], requests: [] };
      page.on('console', (m) => {
        if (m.type() === 'error') watched.consoleErrors.push(m.text());
      });
      page.on('pageerror', (err) => watched.pageErrors.push(err.message));
      page.on('dialog', (d) => {
        watched.dialogs.push(`${d.type()}: ${d.message()}`);
        void d.dismiss().catch(() => {});
      });
      page.on('request', (r) => watched.requests.push(r.url()));
      open.push(watched);
      return watched;
    },
  };
}

/** Signs in as a person does: the console at `/`, the token typed into the form, until the header shows the role. */
export async function signIn(page: Page, token: string, role: 'user' | 'operator'): Promise<void> {
  await page.goto('/');
  await page.getByTestId('token').fill(token);
  await page.getByTestId('sign-in').click();
  await expect.poll(() => textNow(page.getByTestId('role')), { timeout: 15_000 }).toBe(role);
}

/**
 * The text of what matches now, joined (empty when nothing does), without playwright's wait for
 * the element: for `expect.poll`, which does the waiting and says what it last saw.
 */
export async function textNow(locator: Locator): Promise<string> {
  return (await locator.allTextContents()).join('').trim();
}

/** An attribute of each element that matches now, in order (none: `[]`), without waiting. */
export function attributesNow(locator: Locator, name: string): Promise<(string | null)[]> {
  return locator.evaluateAll((els, attr) => els.map((el) => el.getAttribute(attr)), name);
}
