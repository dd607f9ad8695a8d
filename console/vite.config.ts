/**
 * The console's build (docs/console.md): Preact through Vite, assets named by their content's
 * hash, and each text asset written beside itself gzipped and brotli-compressed so the gateway
 * serves them precompressed (@fastify/static `preCompressed`) and never compresses per request.
 * No inline script or style anywhere, so the page lives under `script-src 'self'; style-src 'self'`.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

const root = import.meta.dirname;
const outDir = path.join(root, 'dist');
const COMPRESSIBLE = /\.(js|css|html|svg|json|map)$/;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(path.join(dir, entry.name)) : [path.join(dir, entry.name)],
  );
}

/** After the bundle is written: `x.js.gz` and `x.js.br` beside each text asset. */
const precompress = (): Plugin => ({
  name: 'tws-precompress',
  apply: 'build',
  closeBundle() {
    for (const file of files(outDir).filter((f) => COMPRESSIBLE.test(f))) {
      const bytes = readFileSync(file);
      writeFileSync(`${file}.gz`, gzipSync(bytes, { level: 9 }));
      writeFileSync(
        `${file}.br`,
        brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY } }),
      );
    }
  },
});

export default defineConfig({
  root,
  base: '/',
  // Preact's JSX, and preact/compat wherever a library imports React (the diff view, the virtualizer).
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: {
    alias: [
      { find: /^react-dom(\/.*)?$/, replacement: 'preact/compat' },
      { find: /^react\/jsx-runtime$/, replacement: 'preact/jsx-runtime' },
      { find: /^react$/, replacement: 'preact/compat' },
    ],
  },
  build: {
    outDir,
    emptyOutDir: true,
    assetsDir: 'assets',
    // Every asset a file of its own: an inlined data: URL script would need a looser CSP.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    reportCompressedSize: false,
  },
  plugins: [precompress()],
});
