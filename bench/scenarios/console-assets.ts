/**
 * The web console's assets: what a first load transfers (the browser's own count, and each file
 * fetched with `accept-encoding: br` against without any: the gateway serves the .br the build
 * wrote), and that a second load of the page fetches no hashed asset again (they are served
 * `immutable` for a year; index.html is `no-cache`, so it is asked again).
 */
import { request } from 'node:http';
import type { Browser } from 'playwright-core';

interface ConsoleAssetFile {
  path: string;
  rawBytes: number;
  brBytes: number;
  cacheControl: string;
}

export interface ConsoleAssetsResult {
  files: ConsoleAssetFile[];
  rawBytes: number;
  brBytes: number;
  /** The browser's first load: bytes on the wire (headers included) and the encodings it was sent. */
  browserTransferredBytes: number;
  browserEncodings: string[];
  /** Hashed assets (under /assets/) the second load asked the network for again (should be none). */
  refetchedOnSecondLoad: string[];
  /** Requests of the second load that reached the network (index.html's revalidation). */
  secondLoadNetworkRequests: number;
}

/** One GET without decoding: the body's bytes as sent, and the headers. */
function getRaw(
  base: string,
  path: string,
  encoding: string,
): Promise<{ bytes: number; body: Buffer; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { headers: { 'accept-encoding': encoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`GET ${path}: ${res.statusCode}`));
        const body = Buffer.concat(chunks);
        resolve({ bytes: body.length, body, headers: res.headers });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

export async function measureAssets(browser: Browser, baseURL: string): Promise<ConsoleAssetsResult> {
  const index = await getRaw(baseURL, '/', 'identity');
  const assets = [...index.body.toString('utf8').matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  const files: ConsoleAssetFile[] = [];
  for (const path of ['/', ...new Set(assets)]) {
    const raw = await getRaw(baseURL, path, 'identity');
    const br = await getRaw(baseURL, path, 'br');
    if (br.headers['content-encoding'] !== 'br') throw new Error(`${path} was not sent br-compressed`);
    files.push({ path, rawBytes: raw.bytes, brBytes: br.bytes, cacheControl: String(raw.headers['cache-control']) });
  }

  const context = await browser.newContext({ baseURL });
  try {
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    const urls = new Map<string, string>();
    const fromNetwork = new Set<string>();
    const fromCache = new Set<string>();
    const encodings = new Set<string>();
    let transferred = 0;
    let counting = true;
    cdp.on('Network.requestWillBeSent', (e) => urls.set(e.requestId, e.request.url));
    cdp.on('Network.requestServedFromCache', (e) => fromCache.add(e.requestId));
    cdp.on('Network.responseReceived', (e) => {
      if (e.response.fromDiskCache || e.response.fromPrefetchCache) fromCache.add(e.requestId);
      else fromNetwork.add(e.requestId);
      const enc = Object.entries(e.response.headers).find(([k]) => k.toLowerCase() === 'content-encoding')?.[1];
      if (counting) encodings.add(`${new URL(e.response.url).pathname}: ${enc ?? 'none'}`);
    });
    cdp.on('Network.loadingFinished', (e) => {
      if (counting) transferred += e.encodedDataLength;
    });
    await page.goto('/', { waitUntil: 'networkidle' });
    counting = false;
    urls.clear();
    fromNetwork.clear();
    fromCache.clear();
    await page.goto('/', { waitUntil: 'networkidle' });
    const network = [...fromNetwork].filter((id) => !fromCache.has(id)).map((id) => new URL(urls.get(id)!).pathname);
    return {
      files,
      rawBytes: files.reduce((s, f) => s + f.rawBytes, 0),
      brBytes: files.reduce((s, f) => s + f.brBytes, 0),
      browserTransferredBytes: transferred,
      browserEncodings: [...encodings],
      refetchedOnSecondLoad: network.filter((p) => p.startsWith('/assets/')),
      secondLoadNetworkRequests: network.length,
    };
  } finally {
    await context.close();
  }
}
