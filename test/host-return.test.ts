/**
 * A host that comes back finishes its waiting cleanups at once: a cleanup that
 * waits for a down host (`host_unavailable`, in its retry schedule) runs as soon as that host's
 * worker registers again, not at its next scheduled retry; one that waits for another host that
 * stays down keeps waiting. Real processes: the gateway, and workers as hosts on one machine.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { taskDirName } from '../domain/task-layout';
import { harnessesPerTest, OPERATOR_TOKEN } from './support/harness';
import { SLEEPER, waitUntil } from './support/scenario';
import { listDir, makeRepo } from './support/world';

const { harness } = harnessesPerTest();

describe('a host that comes back', () => {
  it('runs the cleanups waiting for it within seconds of registering again; one waiting for a host still down waits on', async () => {
    // The harness's own worker stays up (the shared queue's records); a retry schedule of ten
    // minutes: only a host's return can finish its job within the test.
    const h = await harness({ cleanupPolicy: { waitsMs: [600_000], maxAttempts: 5 } });
    const hosts = ['b', 'c'].map((name) => ({
      id: `${name}-${h.config.hostId}`,
      root: path.join(h.scratch, `root-${name}`),
      repos: path.join(h.scratch, `repos-${name}`),
    }));
    for (const host of hosts) for (const dir of [host.root, host.repos]) mkdirSync(dir, { recursive: true });
    const workerEnv = (host: (typeof hosts)[number]) => ({
      TWS_HOST_ID: host.id,
      TWS_WORKSPACE_ROOT: host.root,
      TWS_LOG_DIR: path.join(h.scratch, `logs-${host.id}`),
      TWS_REPOSITORY_ROOTS: host.repos,
      TWS_HOST_HEARTBEAT_MS: '300',
    });
    const workers = hosts.map((host) => h.spawnWorker(workerEnv(host)));
    const gateway = { api: h.api };
    await waitUntil(
      async () =>
        (await h.pool.query('SELECT 1 FROM hosts WHERE host_id = ANY($1)', [hosts.map((x) => x.id)])).rowCount === 2,
      'both hosts registered',
      90_000,
      async () => ({
        registered: (await h.pool.query('SELECT host_id FROM hosts')).rows.map((r) => r.host_id),
        workers: workers.map((w) => ({ pid: w.pid, exit: w.exitCode ?? w.signalCode })),
      }),
    );

    const jobs: string[] = [];
    for (const host of hosts) {
      const name = `app-${host.id.slice(0, 1)}`;
      const repo = makeRepo(host.repos, name);
      const registered = await gateway.api('POST', '/v1/repositories', { name, path: repo, hostId: host.id });
      expect(registered.status, JSON.stringify(registered.body)).toBe(201);
      const task = await gateway.api('POST', '/v1/tasks', {
        title: host.id,
        repositories: [{ repositoryId: registered.body.id }],
      });
      const launched = await gateway.api('POST', `/v1/tasks/${task.body.id}/sessions`, {
        executorType: 'worktree',
        agentProfile: 'shell',
        command: SLEEPER,
      });
      expect(launched.status, JSON.stringify(launched.body)).toBe(201);
      jobs.push(task.body.id);
    }
    for (const worker of workers) worker.kill('SIGKILL');
    await waitUntil(
      async () =>
        (await gateway.api('GET', '/v1/hosts', undefined, OPERATOR_TOKEN)).body.items.filter(
          (x: any) => hosts.some((host) => host.id === x.hostId) && x.live === false,
        ).length === 2,
      'both hosts down',
      10_000,
    );

    const operations: string[] = [];
    for (const taskId of jobs) {
      const archived = await gateway.api('POST', `/v1/tasks/${taskId}/archive`, {});
      expect(archived.status, JSON.stringify(archived.body)).toBe(202);
      operations.push(archived.body.operationId);
    }
    const jobState = async (operationId: string) =>
      (
        await h.pool.query('SELECT state, last_error, attempts FROM cleanup_jobs WHERE operation_id = $1', [
          operationId,
        ])
      ).rows[0];
    for (const operationId of operations)
      await waitUntil(
        async () => (await jobState(operationId))?.state === 'retry_wait',
        'the cleanup waits for its host',
        30_000,
      );
    expect(await jobState(operations[0]!)).toMatchObject({
      state: 'retry_wait',
      last_error: 'host_unavailable',
      attempts: 1,
    });

    // B comes back: its job runs now (not in ten minutes); C's stays waiting.
    h.spawnWorker(workerEnv(hosts[0]!));
    await waitUntil(
      async () => (await jobState(operations[0]!)).state === 'succeeded',
      'the cleanup waiting for B finished',
      30_000,
    );
    expect(listDir(path.join(hosts[0]!.root, taskDirName(jobs[0]!)))).toEqual([]);
    expect(await jobState(operations[1]!)).toMatchObject({
      state: 'retry_wait',
      last_error: 'host_unavailable',
      attempts: 1,
    });
  });
});
