/**
 * The web console as the gateway serves it (docs/console.md): the built page at `/` under the
 * strict Content-Security-Policy, hashed assets immutable and precompressed, the API and /docs
 * as they were. Against the real gateway; the setup built console/dist/ (scripts/build-console.sh).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP, consoleDist } from '../client/gateway/console-site';
import { createHarness, USER_TOKEN, type Harness } from './support/harness';

let h: Harness;
const dist = consoleDist();
const script = readdirSync(path.join(dist, 'assets')).find((name) => /^index-[\w-]+\.js$/.test(name))!;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const get = (url: string, headers: Record<string, string> = {}) => fetch(`${h.baseUrl}${url}`, { headers });

describe('the gateway serves the console at / [console]', () => {
  it('answers the page with the strict CSP, revalidated on every load', async () => {
    const res = await get('/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).toContain("frame-ancestors 'none'");
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const html = await res.text();
    expect(html).toContain(`/assets/${script}`);
    // Nothing from elsewhere, nothing inline: the CSP would refuse it.
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=/);
  });

  it('serves hashed assets immutable, brotli or gzip as asked, the same bytes as built', async () => {
    const built = readFileSync(path.join(dist, 'assets', script));
    const br = await get(`/assets/${script}`, { 'accept-encoding': 'br' });
    expect(br.status).toBe(200);
    expect(br.headers.get('content-encoding')).toBe('br');
    expect(br.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(br.headers.get('content-type')).toMatch(/javascript/);
    // fetch decodes what it is sent: compare with the file as built.
    expect(Buffer.from(await br.arrayBuffer()).equals(built)).toBe(true);
    expect(brotliDecompressSync(readFileSync(path.join(dist, 'assets', `${script}.br`))).equals(built)).toBe(true);

    const gz = await get(`/assets/${script}`, { 'accept-encoding': 'gzip' });
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    expect(gunzipSync(readFileSync(path.join(dist, 'assets', `${script}.gz`))).equals(built)).toBe(true);

    const plain = await get(`/assets/${script}`, { 'accept-encoding': 'identity' });
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(Buffer.from(await plain.arrayBuffer()).equals(built)).toBe(true);
  });

  it('answers an unknown asset 404 with the API error body, and never the build stamp', async () => {
    const missing = await get('/assets/index-nothere.js');
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect((await get('/.sources.sha256')).status).toBe(404);
  });

  it('leaves /v1 and /docs as they were: the API answers JSON, Swagger UI keeps its own headers', async () => {
    const tasks = await get('/v1/tasks', { authorization: `Bearer ${USER_TOKEN}` });
    expect(tasks.status).toBe(200);
    expect(tasks.headers.get('content-security-policy')).toBeNull();
    expect(((await tasks.json()) as { items: unknown[] }).items).toEqual([]);
    expect((await get('/v1/tasks')).status).toBe(401);

    const docs = await get('/docs/');
    expect(docs.status).toBe(200);
    expect(docs.headers.get('content-security-policy')).not.toBe(CONSOLE_CSP);
    expect(await docs.text()).toContain('swagger');
    expect((await get('/openapi.json')).status).toBe(200);
  });
});
