/**
 * The web console at `/` (docs/console.md): the files Vite built into console/dist, served
 * precompressed (the .br and .gz the build wrote beside each, never compressed per request) under
 * a strict Content-Security-Policy. Hashed assets are immutable for a year; index.html is
 * revalidated every time, so a new build is picked up at once. The CSP is set on these files
 * only: /docs (Swagger UI) keeps its own.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'none'",
].join('; ');

/** The checkout: the parent of client/ (run through tsx) or of .build/client/ (built). */
function checkoutRoot(): string {
  const up = path.resolve(__dirname, '../..');
  return path.basename(up) === '.build' ? path.dirname(up) : up;
}

export const consoleDist = (): string => path.join(checkoutRoot(), 'console', 'dist');

/**
 * Registered after the API's routes. Without a build (a checkout where the setup has not run),
 * the gateway serves the API alone and says so in its log.
 */
export async function serveConsole(app: FastifyInstance, root = consoleDist()): Promise<void> {
  if (!existsSync(path.join(root, 'index.html'))) {
    app.log.warn({ root }, 'the console is not built (make setup builds it): GET / is not served');
    return;
  }
  await app.register(fastifyStatic, {
    root,
    prefix: '/',
    // Each built file is a route of its own, listed once at start: an unknown path is the API's 404.
    wildcard: false,
    index: ['index.html'],
    preCompressed: true,
    cacheControl: false,
    etag: true,
    lastModified: true,
    // Only the built files: no listing, no dot files (the build stamp).
    dotfiles: 'deny',
    setHeaders(res, filePath) {
      const hashed = filePath.startsWith(path.join(root, 'assets') + path.sep);
      res.setHeader('cache-control', hashed ? 'public, max-age=31536000, immutable' : 'no-cache');
      res.setHeader('content-security-policy', CONSOLE_CSP);
      res.setHeader('x-content-type-options', 'nosniff');
      res.setHeader('referrer-policy', 'no-referrer');
    },
  });
}
