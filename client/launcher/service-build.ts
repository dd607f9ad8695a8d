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
 * worker holds two V8 heaps (its own and its Workers' one workflow thread, worker/one-workflow-thread.ts);
 * a 4 MB semi-space keeps their young generations small: its peak under the benchmark's bursts
 * fell from 323 to 288 MB (measured when it held three).
 * The gateway holds two (its own and its launches' workflow thread) and allocates little per
 * request: a 2 MB semi-space, and two V8 background threads instead of four on what are 2-core
 * hosts (each thread that allocates gets a malloc arena of its own, which keeps what it freed).
 * Source maps are written beside the files but not enabled (NODE_OPTIONS=--enable-source-maps
 * maps stack traces to the TypeScript when debugging): mapping costs CPU on every stack.
 */
export function serviceArgs(root: string, entry: string): string[] {
  const heap =
    entry === 'worker/main.ts' ? WORKER_HEAP_FLAGS : entry === 'client/gateway/main.ts' ? GATEWAY_HEAP_FLAGS : [];
  return [...heap, path.join(root, '.build', entry.replace(/\.ts$/, '.js'))];
}

const WORKER_HEAP_FLAGS = ['--max-semi-space-size=4'];
const GATEWAY_HEAP_FLAGS = ['--max-semi-space-size=2', '--v8-pool-size=2'];

/**
 * Environment the services start with (the launcher, the Dockerfile and the benchmark set the
 * same). glibc gives each thread that contends for malloc an arena of its own, up to 8 per core,
 * and an arena keeps the pages its thread freed: a service runs a dozen threads (V8's, libuv's,
 * Temporal's Rust core, the workflow thread), and under the benchmark's bursts those arenas held
 * about 45 MB of the gateway. Two arenas keep that to about 10 MB (measured: gateway ready
 * 170 → 144 MB, worker peak 342 → 200 MB, same scenarios).
 */
export const SERVICE_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

/** Bundles the workflow code into `file` with the compiled bundler, in a short-lived process; throws when it fails. */
export function bundleWorkflowsTo(root: string, file: string): void {
  const bundled = spawnSync(process.execPath, [...serviceArgs(root, 'worker/bundle.ts'), file], {
    cwd: root,
    stdio: 'inherit',
  });
  if (bundled.status !== 0) throw new Error('the workflow code did not bundle');
}
