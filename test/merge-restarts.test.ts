/**
 * A merge of three repositories whose worker, Temporal dev server or PostgreSQL is killed
 * (SIGKILL) after the first base moved and before the second [R8.3]: once the part is back, the
 * merge ends `merged` and each base moved exactly once, to git's own merge. The bases move by
 * `git update-ref`; the service's git (TWS_GIT_BINARY) holds the second one until the part is
 * killed. This file's Temporal and PostgreSQL are its own, so that it may kill them.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresService } from '../client/launcher/postgres-service';
import { mergedTree, read } from './support/finishing';
import { createHarness, freePort, type Harness } from './support/harness';
import {
  basesOf,
  expectMovedOnce,
  killed,
  pausingGit,
  settledMerge,
  taskOnRepositories,
  type PausingGit,
} from './support/merge-faults';
import { runTemporalDevServer, startPostgresAt } from './support/processes';
import { send, waitUntil } from './support/scenario';

let dir: string;
let pgPort: number;
let postgres: PostgresService | null = null;
let temporalPort: number;
let temporal: ChildProcess | null = null;
let h: Harness;
let paused: PausingGit;
let worker: ChildProcess;
const workers: ChildProcess[] = [];

const startPostgres = async () => void (postgres = await startPostgresAt(path.join(dir, 'pg'), pgPort));
const startTemporal = async () =>
  void (temporal = await runTemporalDevServer(temporalPort, path.join(dir, 'temporal.sqlite')));

function startWorker(): void {
  worker = h.spawnWorker({ TWS_GIT_BINARY: paused.binary });
  workers.push(worker);
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'tws-merge-restarts-'));
  await chmod(dir, 0o755); // embedded PostgreSQL runs as the postgres user when tests run as root
  [pgPort, temporalPort] = [await freePort(), await freePort()];
  await Promise.all([startPostgres(), startTemporal()]);
  h = await createHarness(
    {},
    { temporalAddress: `127.0.0.1:${temporalPort}`, postgresServerUrl: postgres!.serverUrl, inProcessWorker: false },
  );
  paused = pausingGit(h.scratch);
  startWorker();
}, 180_000);

afterAll(async () => {
  for (const child of workers) await killed(child);
  await h?.close().catch(() => {});
  if (temporal) await killed(temporal);
  await postgres?.stop().catch(() => {});
  await rm(dir, { recursive: true, force: true });
}, 180_000);

/**
 * A three-repository merge held just before its second base moves, `kill` then, the held move let
 * go (`abandon`: it never runs, as a git of a killed worker), `restore`: afterwards the merge is
 * merged and each base moved once.
 */
async function mergeThrough(
  name: string,
  fault: { kill: () => Promise<void>; abandon: boolean; restore: (secondMoved: () => Promise<void>) => Promise<void> },
): Promise<void> {
  const t = await taskOnRepositories(h, name, [{ 'one.txt': '1\n' }, { 'two.txt': '2\n' }, { 'three.txt': '3\n' }]);
  const before = basesOf(t.repos);
  const trees = t.repos.map((r) => mergedTree(r.dir, t.branch));
  paused.arm([`${name}-2-1`]);
  try {
    const started = await send(h.baseUrl, 'POST', `/v1/tasks/${t.taskId}/merge`, { strategy: 'squash' });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    await paused.pausedAt(`${name}-2-1`);
    // The first base moved, the second and third not yet.
    expect(basesOf(t.repos).map((b, i) => b.commit !== before[i]!.commit)).toEqual([true, false, false]);
    await fault.kill();
    paused.release(`${name}-2-1`, { abandon: fault.abandon });
    // What happens while the part is down: the held move of the second base goes on and lands.
    await fault.restore(() =>
      waitUntil(async () => basesOf(t.repos)[1]!.commit !== before[1]!.commit, 'the second base moved', 30_000),
    );

    const merge = await settledMerge(h.baseUrl, started.body.operationId, 150_000);
    expect(merge.state, JSON.stringify(merge)).toBe('merged');
    expect(merge.repositories).toHaveLength(3);
    t.repos.forEach((r, i) => expectMovedOnce(r, before[i]!, merge.repositories[i], trees[i]!));
    t.repos.forEach((r, i) => expect(read(r.dir, ['one.txt', 'two.txt', 'three.txt'][i]!)).toBe(`${i + 1}\n`));
  } finally {
    paused.disarm();
  }
}

describe('a part killed between the first and the second base moving', () => {
  it('the worker: a new worker finishes the merge, each base moved once', async () => {
    await mergeThrough('worker-killed', {
      kill: () => killed(worker),
      // A git started by a worker that died meets SIGPIPE at its first trace line: it never runs.
      abandon: true,
      restore: async () => startWorker(),
    });
  }, 180_000);

  it('Temporal: the second base moves while it is down; once back, the merge ends with each base moved once', async () => {
    await mergeThrough('temporal-killed', {
      kill: () => killed(temporal!),
      abandon: false,
      restore: async (secondMoved) => {
        await secondMoved();
        await startTemporal();
      },
    });
  }, 180_000);

  it('PostgreSQL: the second base moves while it is down; once back, the merge ends with each base moved once', async () => {
    await mergeThrough('postgres-killed', {
      kill: async () => {
        const pid = Number(readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
        process.kill(pid, 'SIGKILL');
        await waitUntil(
          async () =>
            !(await h.pool.query('SELECT 1').then(
              () => true,
              () => false,
            )),
          'PostgreSQL gone',
        );
      },
      abandon: false,
      restore: async (secondMoved) => {
        await secondMoved();
        await startPostgres();
      },
    });
  }, 180_000);
});
