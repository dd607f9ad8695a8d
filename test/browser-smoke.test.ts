/**
 * The browser the console's tests drive (test/support/browser.ts) works on this machine: a real
 * gateway's API reference page (`/docs`) renders in it, its requests are recorded, and a dialog is
 * caught. Kept apart from the console's journeys so that a missing browser says so here first.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attributesNow, browserPerFile, textNow } from './support/browser';
import { createHarness, type Harness } from './support/harness';

let h: Harness;
const browser = browserPerFile();

beforeAll(async () => {
  h = await createHarness({}, { inProcessWorker: false });
});
afterAll(async () => h?.close());

describe('the browser of the console tests', () => {
  it('renders the gateway API reference at /docs, from the document the gateway serves', async () => {
    const { page, requests, consoleErrors } = await browser.page(h.baseUrl);
    await page.goto('/docs');
    // Swagger UI draws one block per operation once it has fetched and read the document.
    const operations = page.locator('.opblock-summary-path');
    await expect.poll(() => operations.count(), { timeout: 20_000 }).toBeGreaterThan(10);
    expect(await textNow(operations)).toContain('/v1/tasks');
    expect(await attributesNow(page.locator('.opblock').first(), 'id')).toHaveLength(1);
    expect(requests.some((url) => new URL(url).pathname.startsWith('/docs/json'))).toBe(true);
    expect(consoleErrors).toEqual([]);
  });

  it('records a dialog the page opens, so that a test fails on it', async () => {
    const watched = await browser.page(h.baseUrl);
    await watched.page.goto('/docs');
    await watched.page.evaluate("alert('from the page')"); // the page's own alert (no DOM types here)
    expect(watched.dialogs).toEqual(['alert: from the page']);
    watched.dialogs.length = 0; // seen and asserted here: not a failure of this test
  });
});
