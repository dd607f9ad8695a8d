/**
 * Idle release and restore (judged since round 5): many tasks, each with a
 * launched-and-stopped session and a worktree holding a modified tracked file and an untracked
 * one, are (a) released by an operator's `POST /v1/idle-release` until every cleanup job
 * succeeded and every worktree is verified gone, then (b) launched again until `201` (each launch
 * materializes on the kept branch and restores the saved work), the work verified byte for byte
 * on a sample. Against bare floors of the same git work on as many worktrees of the same
 * repositories (bench/floor-idle.ts). Halves in A-B-B-A order in each part, so drift hits both;
 * the second half is pinned while the first is released (a pinned task is kept).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { worktreePath } from '../../domain/task-layout';
import { Api, errorCode } from '../api';
import type { BenchContext } from '../context';
import { CpuAccount } from '../cpu';
import { releaseOnFloor, restoreOnFloor, type FloorWorktree } from '../floor-idle';
import { parkHostEnvironments } from '../parked-environments';
import { mapLimit, sleep } from '../processes';
import { elapsedMs, ratio, round } from '../stats';
import { createTasks, gitAsync, killAgents, makeRepo, type Repo } from '../world';
import { leftBehind, waitForJobs } from './cleanup';

interface Throughput {
  seconds: number;
  tasksPerSecond: number;
}

export interface IdleReleaseResult {
  tasks: number;
  repositories: number;
  /** Environments of earlier scenarios set aside meanwhile (bench/parked-environments.ts). */
  parkedEnvironments: number;
  release: {
    product: Throughput & {
      failures: number;
      failureCodes: Record<string, number>;
      leftBehind: number;
      /** Milliseconds until each half's `POST /v1/idle-release` answered (every release prepared; older: every release started). */
      acceptedMs: number[];
      /** Released that were not this half's tasks (should be 0). */
      othersReleased: number;
      kept: Record<string, number>;
    };
    floor: Throughput & { leftBehind: number };
    /** product throughput / floor throughput: target ≥ 0.6. */
    throughputRatio: number;
    cpuPerTaskMs: { product: Record<string, number>; floor: Record<string, number> };
  };
  restore: {
    /** Launches in flight at once. */
    concurrency: number;
    product: Throughput & {
      failures: number;
      failureCodes: Record<string, number>;
      roles: Record<string, number>;
      /** The sessions' `restore` (applied, conflict, none). */
      restoreOutcomes: Record<string, number>;
      verified: { sampled: number; identical: number };
    };
    floor: Throughput & { verified: { sampled: number; identical: number } };
    /** Target ≥ 0.6. */
    throughputRatio: number;
    cpuPerTaskMs: { product: Record<string, number>; floor: Record<string, number> };
  };
}

/** The work left in each worktree: a modified tracked file and an untracked binary file. */
function workOf(i: number, repo: Repo) {
  return {
    readme: `# ${repo.name}\nidle work of task ${i}, not committed\n`,
    untracked: Buffer.from([0, 1, 2, 255, 10, 13, 0, i % 256, (i >> 8) % 256]),
  };
}
const UNTRACKED = 'notes/untracked.bin';

function leaveWork(worktree: string, work: ReturnType<typeof workOf>): void {
  writeFileSync(path.join(worktree, 'README.md'), work.readme);
  mkdirSync(path.join(worktree, 'notes'), { recursive: true });
  writeFileSync(path.join(worktree, UNTRACKED), work.untracked);
}

function workIsBack(worktree: string, work: ReturnType<typeof workOf>): boolean {
  try {
    return (
      readFileSync(path.join(worktree, 'README.md'), 'utf8') === work.readme &&
      readFileSync(path.join(worktree, UNTRACKED)).equals(work.untracked)
    );
  } catch {
    return false;
  }
}

const count = (into: Record<string, number>, key: string) => (into[key] = (into[key] ?? 0) + 1);

export async function runIdleRelease(ctx: BenchContext): Promise<IdleReleaseResult> {
  const { api, config } = ctx;
  const operator = new Api(ctx.services.apiBase, ctx.services.tokens.operator);
  const hostId = 'bench';
  const park = await parkHostEnvironments(ctx.pool, hostId);
  try {
    const repos: Repo[] = [];
    for (let r = 0; r < config.idle.repositories; r++)
      repos.push(await makeRepo(api, ctx.reposDir, `idle-${r + 1}`, config.repoFiles));
    const n = config.idle.tasks;
    const perRepo = await Promise.all(
      repos.map((repo) => createTasks(api, Math.ceil(n / repos.length), [repo], `idle ${repo.name}`)),
    );
    const product = Array.from({ length: n }, (_, i) => {
      const repo = repos[i % repos.length]!;
      const taskId = perRepo[i % repos.length]![Math.floor(i / repos.length)]!;
      return {
        taskId,
        repoPath: repo.path,
        worktreePath: worktreePath(ctx.services.workspaceRoot, taskId, repo.name),
        work: workOf(i, repo),
      };
    });
    ctx.log(`idle release: ${n} launched-and-stopped product tasks and ${n} floor worktrees`);
    await mapLimit(product, config.cleanup.materializeConcurrency, async (p) => {
      const launched = await api.launchOk(p.taskId, 'materialized');
      const stopped = await api.call('POST', `/v1/sessions/${launched.sessionId}/stop`);
      if (stopped.status !== 200) throw new Error(`stopping ${launched.sessionId}: ${stopped.status}`);
    });
    const floor: (FloorWorktree & { work: ReturnType<typeof workOf> })[] = Array.from({ length: n }, (_, i) => {
      const repo = repos[i % repos.length]!;
      return {
        repoPath: repo.path,
        worktreePath: path.join(ctx.floorRoot, 'idle', `wt-${i}`, repo.name),
        branch: `bench-idle-floor/${i}`,
        saveRef: `refs/bench-floor/released/${i}`,
        work: workOf(i, repo),
      };
    });
    await Promise.all(
      repos.map(async (repo) => {
        for (const w of floor.filter((x) => x.repoPath === repo.path))
          await gitAsync(w.repoPath, 'worktree', 'add', '-q', '--no-track', '-b', w.branch, w.worktreePath, 'main');
      }),
    );
    for (const p of product) leaveWork(p.worktreePath, p.work);
    for (const w of floor) leaveWork(w.worktreePath, w.work);
    // Idle for longer than idleForMs (0, the least the route takes) by the release's own clock.
    await sleep(50);

    const half = Math.ceil(n / 2);
    const halves = [product.slice(0, half), product.slice(half)];
    const floorHalves = [floor.slice(0, half), floor.slice(half)];

    // (a) Release.
    const rel = {
      times: [] as number[],
      floorTimes: [] as number[],
      failureCodes: {} as Record<string, number>,
      kept: {} as Record<string, number>,
      acceptedMs: [] as number[],
      othersReleased: 0,
      left: 0,
      floorLeft: 0,
      cpu: new CpuAccount(ctx.cpu),
      floorCpu: new CpuAccount(ctx.cpu),
    };
    const releaseProduct = async (batch: typeof product, pinned: typeof product) => {
      await mapLimit(pinned, 8, (p) => api.call('POST', `/v1/tasks/${p.taskId}/pin`));
      const mine = new Set(batch.map((p) => p.taskId));
      await rel.cpu.around(async () => {
        const start = performance.now();
        const res = await operator.call<{
          released: { taskId: string; operationId: string | null }[];
          kept: { taskId: string; reason: string }[];
        }>('POST', '/v1/idle-release', { hostId, idleForMs: 0 });
        rel.acceptedMs.push(round(res.ms));
        if (res.status !== 200)
          throw new Error(`idle release: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
        for (const k of res.body.kept) if (mine.has(k.taskId)) count(rel.kept, k.reason);
        const ops: string[] = [];
        for (const r of res.body.released) {
          if (!mine.has(r.taskId)) rel.othersReleased++;
          if (r.operationId) ops.push(r.operationId);
        }
        const releasedMine = res.body.released.filter((r) => mine.has(r.taskId)).length;
        if (releasedMine < batch.length) rel.failureCodes.not_released = batch.length - releasedMine;
        for (const state of (await waitForJobs(ctx, ops, 600_000)).values())
          if (state !== 'succeeded') count(rel.failureCodes, state);
        rel.left += leftBehind(batch);
        rel.times.push(elapsedMs(start));
      });
      await mapLimit(pinned, 8, (p) => api.call('DELETE', `/v1/tasks/${p.taskId}/pin`));
    };
    const releaseFloor = (batch: typeof floor) =>
      rel.floorCpu.around(async () => {
        const start = performance.now();
        await releaseOnFloor(batch);
        rel.floorLeft += leftBehind(batch);
        rel.floorTimes.push(elapsedMs(start));
      });
    await releaseProduct(halves[0]!, halves[1]!);
    await releaseFloor(floorHalves[0]!);
    await releaseFloor(floorHalves[1]!);
    await releaseProduct(halves[1]!, []);

    // (b) Restore: the next launch of each released task.
    const concurrency = config.idle.restoreConcurrency;
    const res = {
      times: [] as number[],
      floorTimes: [] as number[],
      failureCodes: {} as Record<string, number>,
      roles: {} as Record<string, number>,
      sessions: [] as string[],
      cpu: new CpuAccount(ctx.cpu),
      floorCpu: new CpuAccount(ctx.cpu),
    };
    const restoreProduct = (batch: typeof product) =>
      res.cpu.around(async () => {
        const start = performance.now();
        await mapLimit(batch, concurrency, async (p) => {
          const launched = await api.launch(p.taskId);
          if (launched.status !== 201) return count(res.failureCodes, errorCode(launched));
          count(res.roles, launched.body.role);
          res.sessions.push(launched.body.sessionId);
        });
        res.times.push(elapsedMs(start));
      });
    const restoreFloor = (batch: typeof floor) =>
      res.floorCpu.around(async () => {
        const start = performance.now();
        await restoreOnFloor(batch);
        res.floorTimes.push(elapsedMs(start));
      });
    await restoreProduct(halves[0]!);
    await restoreFloor(floorHalves[0]!);
    await restoreFloor(floorHalves[1]!);
    await restoreProduct(halves[1]!);

    // After the measurement: what each launch says of its restore, and the bytes on a sample.
    const restoreOutcomes: Record<string, number> = {};
    await mapLimit(res.sessions, 8, async (id) => {
      const view = await api.call<{ restore?: string | null }>('GET', `/v1/sessions/${id}`);
      count(restoreOutcomes, view.body.restore ?? 'none');
    });
    const step = Math.max(1, Math.floor(n / config.idle.verifySample));
    const sampleOf = <T>(xs: T[]) => xs.filter((_, i) => i % step === 0).slice(0, config.idle.verifySample);
    const productSample = sampleOf(product);
    const floorSample = sampleOf(floor);
    await killAgents(ctx.pool);

    const seconds = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / 1000;
    const throughput = (xs: number[]): Throughput => ({
      seconds: round(seconds(xs), 3),
      tasksPerSecond: round(n / seconds(xs)),
    });
    const failures = (codes: Record<string, number>) => Object.values(codes).reduce((s, x) => s + x, 0);
    return {
      tasks: n,
      repositories: repos.length,
      parkedEnvironments: park.parked,
      release: {
        product: {
          ...throughput(rel.times),
          failures: failures(rel.failureCodes),
          failureCodes: rel.failureCodes,
          leftBehind: rel.left,
          acceptedMs: rel.acceptedMs,
          othersReleased: rel.othersReleased,
          kept: rel.kept,
        },
        floor: { ...throughput(rel.floorTimes), leftBehind: rel.floorLeft },
        throughputRatio: ratio(seconds(rel.floorTimes), seconds(rel.times)),
        cpuPerTaskMs: { product: rel.cpu.per(n), floor: rel.floorCpu.per(n) },
      },
      restore: {
        concurrency,
        product: {
          ...throughput(res.times),
          failures: failures(res.failureCodes),
          failureCodes: res.failureCodes,
          roles: res.roles,
          restoreOutcomes,
          verified: {
            sampled: productSample.length,
            identical: productSample.filter((p) => workIsBack(p.worktreePath, p.work)).length,
          },
        },
        floor: {
          ...throughput(res.floorTimes),
          verified: {
            sampled: floorSample.length,
            identical: floorSample.filter((w) => workIsBack(w.worktreePath, w.work)).length,
          },
        },
        throughputRatio: ratio(seconds(res.floorTimes), seconds(res.times)),
        cpuPerTaskMs: { product: res.cpu.per(n), floor: res.floorCpu.per(n) },
      },
    };
  } finally {
    await park.unpark();
  }
}
