// Compiles the services' TypeScript to plain CommonJS under .build/, file for file (the same
// layout, so relative paths such as db/migrations and ../workflows still hold). The worker and
// the gateway then run without a TypeScript loader: tsx keeps an off-thread loader and esbuild
// resident, about 50 MB per process. Transpile only; `npx tsc -p .` is the type check.
import { build } from 'esbuild';
import { cpSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, '.build');
const folders = ['domain', 'db', 'activities', 'workflows', 'worker', 'client', 'git'];

function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

rmSync(out, { recursive: true, force: true });
await build({
  entryPoints: folders.flatMap((folder) => sources(path.join(root, folder))),
  outdir: out,
  outbase: root,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  logLevel: 'warning',
});
cpSync(path.join(root, 'db/migrations'), path.join(out, 'db/migrations'), { recursive: true });
