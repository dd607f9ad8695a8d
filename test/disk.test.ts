/**
 * Disk in sight and a low disk refused before git [R6.11], on a real small filesystem: the
 * workspace root is a size-limited tmpfs mounted for this file (root can mount one here; where
 * root cannot, the run fails; not root, the file says so and skips). No file system is mocked: git meets a real ENOSPC.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { run as cli } from '../client/cli/cli';
import { releaseIdleTask, savedWorkOf } from './support/cleanup';
import { createHarness, OPERATOR_TOKEN, type Harness } from './support/harness';
import { requiredWhereExpected } from './support/host-abilities';
import { createTask, expectSafeError, launch, registerRepo, waitUntil } from './support/scenario';
import { branches, commitOf, fingerprint, git, makeRepo, rowCounts, worktreePaths } from './support/world';

const MiB = 1024 * 1024;
const ROOT_SIZE = 48 * MiB;
const MIN_FREE = 16 * MiB;

/** A tmpfs of ROOT_SIZE at a new folder, or null where this process may not mount one. */
function mountSmallRoot(): string | null {
  if (process.getuid?.() !== 0) return null;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tws-small-root-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${ROOT_SIZE},mode=0755`, 'tmpfs', dir], { stdio: 'ignore' });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
}

const smallRoot = mountSmallRoot();
// Root can mount one on these machines: a mount that fails there fails the run, never skips it.
requiredWhereExpected('a size-limited tmpfs for the workspace root', smallRoot !== null, process.getuid?.() === 0);
let h: Harness;
let n = 0;

beforeAll(async () => {
  if (!smallRoot) return;
  h = await createHarness({
    workspaceRoot: smallRoot,
    minFreeDisk: { kind: 'bytes', bytes: MIN_FREE },
    diskMeasureEveryMs: 300,
  });
}, 120_000);
afterAll(async () => {
  await h?.close();
  if (smallRoot) {
    execFileSync('umount', ['-l', smallRoot], { stdio: 'ignore' });
    rmSync(smallRoot, { recursive: true, force: true });
  }
});

async function repo(files?: Record<string, string>) {
  const name = `disk-${++n}`;
  const dir = makeRepo(h.scratch, name, files ? { files } : {});
  return { dir, name, id: await registerRepo(h, dir, name) };
}

const freeBytes = () => {
  const fs = statfsSync(smallRoot!);
  return fs.bavail * fs.bsize;
};

/** Waits for a measurement taken after now, and answers what the host view then says. */
async function measuredHost(): Promise<any> {
  const since = Date.now();
  let host: any = null;
  await waitUntil(async () => {
    const res = await h.api('GET', '/v1/hosts', undefined, OPERATOR_TOKEN);
    host = res.body.items.find((x: any) => x.hostId === h.config.hostId);
    return host?.disk != null && Date.parse(host.disk.measuredAt) > since;
  }, 'a disk measurement');
  return host;
}

/** Everything a refused first launch must leave as it was: files, branches, worktrees and rows. */
async function worldOf(r: { dir: string }) {
  const rows = await rowCounts(h.pool);
  return {
    root: readdirSync(smallRoot!).sort(),
    branches: branches(r.dir),
    worktrees: worktreePaths(r.dir),
    sessions: rows.sessions,
    executions: rows.executions,
    inventory: rows.environment_repos,
  };
}

describe.skipIf(!smallRoot)(
  'disk in sight and a low disk refused [R6.11] (a real tmpfs workspace root; skipped where no tmpfs can be mounted: not root)',
  () => {
    it("measures each workspace, ignored files too, and the host's filesystem: task, host, disk and metrics views", async () => {
      const r = await repo({ 'README.md': '# disk\n', '.gitignore': 'node_modules/\n' });
      const taskId = await createTask(h, [r.id]);
      const res = await launch(h, taskId);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const worktree = path.join(smallRoot!, taskDirName(taskId), r.name);
      // An ignored dependency folder counts: it is what fills disks.
      mkdirSync(path.join(worktree, 'node_modules'));
      writeFileSync(path.join(worktree, 'node_modules/dep.bin'), Buffer.alloc(3 * MiB, 7));
      expect(git(worktree, 'status', '--porcelain')).toBe('');

      const host = await measuredHost();
      expect(host.disk.totalBytes).toBe(ROOT_SIZE);
      expect(host.disk.freeBytes).toBeLessThanOrEqual(ROOT_SIZE - 3 * MiB);
      expect(host.disk.workspaceBytes).toBeGreaterThanOrEqual(3 * MiB);
      expect(host.lowDisk).toBe(false);

      const task = await h.api('GET', `/v1/tasks/${taskId}`);
      expect(task.body.disk.bytes).toBeGreaterThanOrEqual(3 * MiB);
      expect(task.body.disk.bytes).toBeLessThan(5 * MiB);
      expect(Date.parse(task.body.disk.measuredAt)).toBeGreaterThan(0);

      const disk = await h.api('GET', `/v1/hosts/${h.config.hostId}/disk?limit=5`, undefined, OPERATOR_TOKEN);
      expect(disk.status, JSON.stringify(disk.body)).toBe(200);
      expect(disk.body.largest[0]).toMatchObject({ taskId, taskEnvironmentId: res.body.taskEnvironmentId });
      expect(disk.body.largest[0].bytes).toBe(task.body.disk.bytes);
      expect((await h.api('GET', '/v1/hosts/no-such-host/disk', undefined, OPERATOR_TOKEN)).status).toBe(404);

      const metrics = await fetch(`${h.baseUrl}/metrics`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });
      const text = await metrics.text();
      for (const name of ['tws_host_disk_free_bytes', 'tws_host_disk_total_bytes', 'tws_host_workspace_bytes'])
        expect(text).toMatch(new RegExp(`^${name}\\{host="${h.config.hostId}"\\} \\d+`, 'm'));
      expect(text).toContain(`tws_host_disk_low{host="${h.config.hostId}"} 0`);

      // The CLI lists the largest tasks of the host.
      const out: string[] = [];
      const env = { TWS_API_URL: h.baseUrl, TWS_OPERATOR_TOKEN: OPERATOR_TOKEN };
      expect(await cli(['disk', '--host', h.config.hostId], env, (s) => out.push(s))).toBe(0);
      expect(out.join('')).toContain(taskId);
      expect(out.join('')).toMatch(/MiB free of 48\.0 MiB/);
    });

    it('a materialization that fills the disk undoes everything it made and answers 507 host_disk_low', async () => {
      // More than the whole filesystem: git passes the free-space check, then meets ENOSPC mid-checkout.
      const r = await repo({ 'README.md': '# big\n' });
      writeFileSync(path.join(r.dir, 'big.bin'), randomBytes(ROOT_SIZE + 8 * MiB));
      git(r.dir, 'add', 'big.bin');
      git(r.dir, 'commit', '-q', '-m', 'big');
      const taskId = await createTask(h, [r.id]);
      const before = await worldOf(r);
      const freeBefore = freeBytes();

      const res = await launch(h, taskId);
      expect(res.status, JSON.stringify(res.body)).toBe(507);
      expectSafeError(res.body, 'host_disk_low');
      expect(res.body.error).toMatchObject({ recoverable: true, action: 'free_space' });
      const after = await worldOf(r);
      expect(after).toEqual(before);
      expect(after.branches).not.toContain(taskBranchName(taskId));
      expect(existsSync(path.join(smallRoot!, taskDirName(taskId)))).toBe(false);
      // What git wrote before it ran out is gone too.
      expect(Math.abs(freeBytes() - freeBefore)).toBeLessThan(MiB);
    });

    it('a free space under TWS_MIN_FREE_DISK refuses a first launch before git; an attach that creates nothing still works', async () => {
      const shared = await repo();
      const existing = await createTask(h, [shared.id]);
      expect((await launch(h, existing)).status).toBe(201);

      // Fill the filesystem until less than the minimum is free.
      const filler = path.join(smallRoot!, 'filler.bin');
      writeFileSync(filler, Buffer.alloc(freeBytes() - MIN_FREE / 2, 1));
      try {
        expect(freeBytes()).toBeLessThan(MIN_FREE);
        const r = await repo();
        const taskId = await createTask(h, [r.id]);
        const before = await worldOf(r);
        const res = await launch(h, taskId);
        expect(res.status, JSON.stringify(res.body)).toBe(507);
        expectSafeError(res.body, 'host_disk_low');
        expect(res.body.error).toMatchObject({ recoverable: true, action: 'free_space', retryAfterMs: 0 });
        expect(await worldOf(r)).toEqual(before);
        expect(existsSync(path.join(smallRoot!, taskDirName(taskId)))).toBe(false);

        // The task that has its workspace attaches a second session: nothing is created.
        const attach = await launch(h, existing);
        expect(attach.status, JSON.stringify(attach.body)).toBe(201);
        expect(attach.body.role).toBe('attached');

        const host = await measuredHost();
        expect(host.lowDisk).toBe(true);
        const metrics = await (
          await fetch(`${h.baseUrl}/metrics`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
        ).text();
        expect(metrics).toContain(`tws_host_disk_low{host="${h.config.hostId}"} 1`);

        // Space freed: the same launch goes through.
        rmSync(filler);
        const again = await launch(h, taskId);
        expect(again.status, JSON.stringify(again.body)).toBe(201);
      } finally {
        rmSync(filler, { force: true });
      }
    });
    /** A task launched, stopped with `work` left in its worktree, and released idle: its work on a saved ref. */
    async function releasedWith(work: (worktree: string) => void) {
      const r = await repo();
      const taskId = await createTask(h, [r.id]);
      const first = await launch(h, taskId);
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      expect((await h.api('POST', `/v1/sessions/${first.body.sessionId}/stop`)).status).toBe(200);
      const worktree = path.join(smallRoot!, taskDirName(taskId), r.name);
      work(worktree);
      const before = fingerprint(worktree, ['.git']);
      const job = await releaseIdleTask(h, taskId);
      const ref: string = job.report.worktrees[0].savedRef;
      expect(existsSync(worktree)).toBe(false);
      return {
        r,
        taskId,
        sessionId: first.body.sessionId as string,
        worktree,
        before,
        ref,
        commit: commitOf(r.dir, ref),
      };
    }

    /**
     * A refused re-materialization made nothing (no worktree, no folder; the refusals are sessions
     * that failed, nothing more) and left the saved work as it was, still waiting to be restored:
     * recorded neither applied nor a conflict.
     */
    async function expectNothingMade(
      t: Awaited<ReturnType<typeof releasedWith>>,
      before: Awaited<ReturnType<typeof worldOf>>,
    ) {
      expect({ ...(await worldOf(t.r)), sessions: 0 }).toEqual({ ...before, sessions: 0 });
      expect(existsSync(path.join(smallRoot!, taskDirName(t.taskId)))).toBe(false);
      expect(commitOf(t.r.dir, t.ref)).toBe(t.commit);
      expect((await savedWorkOf(h, t.r.id, t.taskId))[0]).toMatchObject({
        ref: t.ref,
        restore: null,
        restoredAt: null,
      });
    }

    it('a released task is not materialized again on a low disk (launch and resume): 507 before git, its saved work untouched', async () => {
      const t = await releasedWith((w) => writeFileSync(path.join(w, 'notes.txt'), 'my notes\n'));
      const filler = path.join(smallRoot!, 'filler-released.bin');
      writeFileSync(filler, Buffer.alloc(freeBytes() - MIN_FREE / 2, 1));
      try {
        const before = await worldOf(t.r);
        for (const attempt of [
          () => launch(h, t.taskId),
          () => h.api('POST', `/v1/sessions/${t.sessionId}/resume`, {}),
        ]) {
          const res = await attempt();
          expect(res.status, JSON.stringify(res.body)).toBe(507);
          expectSafeError(res.body, 'host_disk_low');
        }
        await expectNothingMade(t, before);
      } finally {
        rmSync(filler, { force: true });
      }
      // Room again: the launch materializes and the work comes back.
      const again = await launch(h, t.taskId);
      expect(again.status, JSON.stringify(again.body)).toBe(201);
      expect(fingerprint(t.worktree, ['.git'])).toBe(t.before);
    });

    it('a restore that runs out of space part-way leaves nothing: 507, no worktree, the branch and the saved ref as they were; the next launch restores it all', async () => {
      const bigBytes = 20 * MiB;
      const big = randomBytes(bigBytes);
      const t = await releasedWith((w) => writeFileSync(path.join(w, 'big-untracked.bin'), big));
      const branchHead = commitOf(t.r.dir, taskBranchName(t.taskId));
      // Room enough for the free-space check and the checkout, not for the work the restore writes.
      const filler = path.join(smallRoot!, 'filler-restore.bin');
      writeFileSync(filler, Buffer.alloc(freeBytes() - (MIN_FREE + 2 * MiB), 1));
      try {
        expect(freeBytes()).toBeGreaterThan(MIN_FREE);
        expect(freeBytes()).toBeLessThan(bigBytes);
        const before = await worldOf(t.r);
        const res = await launch(h, t.taskId);
        expect(res.status, JSON.stringify(res.body)).toBe(507);
        expectSafeError(res.body, 'host_disk_low');
        await expectNothingMade(t, before);
        expect(commitOf(t.r.dir, taskBranchName(t.taskId))).toBe(branchHead);
      } finally {
        rmSync(filler, { force: true });
      }
      const again = await launch(h, t.taskId);
      expect(again.status, JSON.stringify(again.body)).toBe(201);
      expect(fingerprint(t.worktree, ['.git'])).toBe(t.before);
      expect((await h.api('GET', `/v1/sessions/${again.body.sessionId}`)).body.restore).toBe('applied');
    });
  },
);
