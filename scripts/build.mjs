// Compiles the services' TypeScript to plain CommonJS under .build/, file for file (the same
// layout, so relative paths such as db/migrations and ../workflows still hold). The worker and
// the gateway then run without a TypeScript loader: tsx keeps an off-thread loader and esbuild
// resident, about 50 MB per process. Transpile only; `npx tsc -p .` is the type check.
import { build } from 'esbuild';
import { cpSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, '.build');
const folders = ['domain', 'db', 'activities', 'executors', 'workflows', 'worker', 'client', 'git', 'ssh'];

function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

// Built aside, then moved into place file by file (each rename atomic): a service starting from
// .build while another process builds (a test run that starts the launcher) never finds a file
// missing or half written, as it did when .build was removed and written anew.
const staging = `${out}.staging-${process.pid}`;
rmSync(staging, { recursive: true, force: true });
await build({
  entryPoints: folders.flatMap((folder) => sources(path.join(root, folder))),
  outdir: staging,
  outbase: root,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  logLevel: 'warning',
});
cpSync(path.join(root, 'db/migrations'), path.join(staging, 'db/migrations'), { recursive: true });

const built = new Set();
function moveInto(from, to) {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const [src, dst] = [path.join(from, entry.name), path.join(to, entry.name)];
    if (entry.isDirectory()) moveInto(src, dst);
    else {
      renameSync(src, dst);
      built.add(dst);
    }
  }
}
moveInto(staging, out);
rmSync(staging, { recursive: true, force: true });
// What the sources no longer produce goes (a file, never a folder a running service may read).
function prune(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) prune(full);
    else if (!built.has(full)) rmSync(full, { force: true });
  }
}
prune(out);
