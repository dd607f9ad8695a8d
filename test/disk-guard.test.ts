/**
 * An agent cannot fill its host's disk [R6.11]: on a real small filesystem (an ext4 image
 * loop-mounted as the workspace root; root can mount one here, where root cannot the run fails,
 * not root the file says so and skips), an agent writes as fast as it can and never stops by
 * itself. With no quota of its task's, the worker's free-space guard stops it before the free
 * space falls under TWS_MIN_FREE_DISK, its execution says why, and the API keeps answering.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statfsSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './support/harness';
import { requiredWhereExpected } from './support/host-abilities';
import { createTask, launch, registerRepo, waitUntil } from './support/scenario';
import { taskDirName } from '../domain/task-layout';
import { makeRepo } from './support/world';

const MiB = 1024 * 1024;
const IMAGE_SIZE = 2048 * MiB;
const MIN_FREE = 512 * MiB;
/** The guard's floor, small beside the fall it will see between two checks: the margin it keeps is the one it measures. */
const MARGIN_FLOOR = 64 * MiB;

/** An ext4 filesystem of IMAGE_SIZE loop-mounted at a new folder, or null where this process may not mount one. */
function mountSmallRoot(): { dir: string; image: string } | null {
  if (process.getuid?.() !== 0) return null;
  const base = mkdtempSync(path.join(os.tmpdir(), 'tws-guard-root-'));
  // Traversable: agents run as their workspace's own uid.
  chmodSync(base, 0o711);
  const image = path.join(base, 'root.img');
  const dir = path.join(base, 'root');
  try {
    writeFileSync(image, '');
    truncateSync(image, IMAGE_SIZE);
    execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', image], { stdio: 'ignore' });
    mkdirSync(dir, { mode: 0o755 });
    execFileSync('mount', ['-o', 'loop', image, dir], { stdio: 'ignore' });
    return { dir, image };
  } catch {
    rmSync(base, { recursive: true, force: true });
    return null;
  }
}

const mounted = mountSmallRoot();
const smallRoot = mounted?.dir ?? null;
// Root can loop-mount one on these machines: a mount that fails there fails the run, never skips it.
requiredWhereExpected('a loop-mounted ext4 workspace root', smallRoot !== null, process.getuid?.() === 0);
let h: Harness;

beforeAll(async () => {
  if (!smallRoot) return;
  h = await createHarness({
    workspaceRoot: smallRoot,
    minFreeDisk: { kind: 'bytes', bytes: MIN_FREE },
    // The default task quota (20 GiB) is larger than this whole filesystem: the host's guard alone
    // bounds the writer. Its check every 250 ms is the default.
    diskGuardMarginBytes: MARGIN_FLOOR,
  });
}, 120_000);
afterAll(async () => {
  await h?.close();
  if (mounted) {
    execFileSync('umount', ['-l', mounted.dir], { stdio: 'ignore' });
    rmSync(path.dirname(mounted.dir), { recursive: true, force: true });
  }
});

const freeBytes = () => {
  const fs = statfsSync(smallRoot!);
  return fs.bavail * fs.bsize;
};

describe.skipIf(!smallRoot)(
  'the free-space guard (a real ext4 workspace root; skipped where none can be mounted: not root)',
  () => {
    // First: the guard's margin is the largest fall of the last minute, so a writer started within
    // a minute of the full-speed filler below is stopped disk_low by design, not by its quota.
    it("a task's own quota stops its writer at the default check, long before the host's guard would [R6.11]", async () => {
      const name = 'quota-filler';
      const quota = 64 * MiB;
      const repo = await registerRepo(h, makeRepo(h.scratch, name), name);
      const taskId = await createTask(h, [repo], { diskQuotaBytes: quota });
      // 8 MiB about ten times a second, without end: the guard would stop it only once the host
      // neared its minimum, more than a gigabyte away; checked every 30 s, the quota would too.
      const fill = 'i=0; while :; do dd if=/dev/zero of=fill.$i bs=1M count=8 2>/dev/null; i=$((i+1)); sleep 0.1; done';
      const res = await launch(h, taskId, { command: ['sh', '-c', fill] });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      let view: any = null;
      await waitUntil(async () => {
        view = (await h.api('GET', `/v1/sessions/${res.body.sessionId}`)).body;
        return view.state !== 'running' && view.state !== 'starting';
      }, 'the quota filler to be stopped');
      expect(view.execution).toMatchObject({ state: 'stopped', outcome: 'disk_quota' });
      const task = (await h.api('GET', `/v1/tasks/${taskId}`)).body;
      expect(task.limits).toMatchObject({ diskQuotaBytes: quota, overDiskQuota: true });
      expect(freeBytes()).toBeGreaterThan(MIN_FREE + 1024 * MiB);
      const again = await launch(h, taskId);
      expect(again.status).toBe(507);
      expect(again.body.error).toMatchObject({ code: 'task_disk_quota' });
    }, 120_000);
    it('an agent writing at full speed is stopped disk_low before the free space falls under the minimum; the API keeps answering [R6.11]', async () => {
      const name = 'guard-filler';
      const taskId = await createTask(h, [await registerRepo(h, makeRepo(h.scratch, name), name)]);
      // A task is bounded by default, but here by more than the host can hold.
      expect((await h.api('GET', `/v1/tasks/${taskId}`)).body.limits.diskQuotaBytes).toBe(20 * 1024 * MiB);
      const freeAtStart = freeBytes();
      expect(freeAtStart).toBeGreaterThan(MIN_FREE + 1024 * MiB);
      // Never ends by itself: a write that finds no room fails, and the loop writes the next file.
      const fill = 'i=0; while :; do dd if=/dev/zero of=fill.$i bs=1M count=64 2>/dev/null; i=$((i+1)); done';
      const res = await launch(h, taskId, { command: ['sh', '-c', fill] });
      expect(res.status, JSON.stringify(res.body)).toBe(201);

      // The API asked all along, beside the sampling.
      const answers: number[] = [];
      let sampling = true;
      const asking = (async () => {
        while (sampling) {
          answers.push((await h.api('GET', '/readyz', undefined, null)).status);
          await new Promise((r) => setTimeout(r, 200));
        }
      })();

      // The filesystem sampled every 50 ms for up to a minute; past the stop, two seconds more.
      let lowest = freeAtStart;
      let view: any = null;
      let stoppedAt: number | null = null;
      const deadline = Date.now() + 60_000;
      for (let i = 0; Date.now() < deadline; i++) {
        lowest = Math.min(lowest, freeBytes());
        if (stoppedAt === null && i % 4 === 0) {
          view = (await h.api('GET', `/v1/sessions/${res.body.sessionId}`)).body;
          if (view.state !== 'running' && view.state !== 'starting') stoppedAt = Date.now();
        }
        if (stoppedAt !== null && Date.now() - stoppedAt > 2_000) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      sampling = false;
      await asking;

      console.log(
        `free-space guard: minimum ${MIN_FREE} bytes, lowest free seen ${lowest} bytes (${((lowest - MIN_FREE) / MiB).toFixed(1)} MiB above it), written ${((freeAtStart - lowest) / MiB).toFixed(0)} MiB`,
      );
      expect(stoppedAt, 'the filler was stopped').not.toBeNull();
      expect(lowest).toBeGreaterThanOrEqual(MIN_FREE);
      // It wrote: the guard met a real writer, not an idle agent.
      expect(freeAtStart - lowest).toBeGreaterThan(128 * MiB);
      expect(view.state).toBe('stopped');
      expect(view.execution).toMatchObject({ state: 'stopped', outcome: 'disk_low' });
      expect(answers.length).toBeGreaterThan(0);
      expect(
        answers.every((s) => s === 200),
        JSON.stringify(answers),
      ).toBe(true);
      expect((await h.api('GET', '/readyz', undefined, null)).status).toBe(200);
      expect((await h.api('GET', `/v1/tasks/${taskId}`)).status).toBe(200);
      // Nothing of the filler runs on: the free space stays where the stop left it.
      const afterStop = freeBytes();
      await new Promise((r) => setTimeout(r, 1_000));
      expect(freeBytes()).toBeGreaterThanOrEqual(afterStop);
      // Room again for the next test.
      rmSync(path.join(smallRoot!, taskDirName(taskId), name), { recursive: true, force: true });
    }, 120_000);
  },
);
