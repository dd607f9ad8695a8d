/**
 * The worker and the gateway run as compiled JavaScript (scripts/build.mjs writes .build/), not
 * through a TypeScript loader, which would keep about 50 MB more resident in each. The launcher,
 * the benchmark and the tests build first and start the same files.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

/** Compiles the services into <root>/.build (a fraction of a second); throws when it fails. */
export function buildServices(root: string): void {
  const built = spawnSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) throw new Error('the services did not compile (scripts/build.mjs)');
}

/**
 * Node arguments that run a service entry such as `worker/main.ts` from its compiled file. The
 * worker holds three V8 heaps (its own and one per workflow thread); a 4 MB semi-space keeps
 * their young generations small: its peak under the benchmark's bursts fell from 323 to 288 MB.
 * Source maps are written beside the files but not enabled (NODE_OPTIONS=--enable-source-maps
 * maps stack traces to the TypeScript when debugging): mapping costs CPU on every stack.
 */
export function serviceArgs(root: string, entry: string): string[] {
  // The gateway runs launches on a workflow thread of its own too.
  const heap = entry === 'worker/main.ts' || entry === 'client/gateway/main.ts' ? [WORKER_HEAP_FLAG] : [];
  return [...heap, path.join(root, '.build', entry.replace(/\.ts$/, '.js'))];
}

const WORKER_HEAP_FLAG = '--max-semi-space-size=4';

/** Bundles the workflow code into `file` with the compiled bundler, in a short-lived process; throws when it fails. */
export function bundleWorkflowsTo(root: string, file: string): void {
  const bundled = spawnSync(process.execPath, [...serviceArgs(root, 'worker/bundle.ts'), file], { cwd: root, stdio: 'inherit' });
  if (bundled.status !== 0) throw new Error('the workflow code did not bundle');
}
