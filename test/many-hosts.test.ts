/**
 * Many hosts: hosts are records, repositories belong to a host, a task's work is placed
 * on its repositories' host, and a host that is down is refused or waited for; proven with real
 * processes as hosts on one machine.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { harnessesPerTest, OPERATOR_TOKEN, USER_TOKEN } from './support/harness';
import { taskDirName } from '../domain/task-layout';
import { IDLE_RELEASE_SCHEDULE_ID, ORPHAN_SWEEP_SCHEDULE_ID, RECONCILE_SCHEDULE_ID } from '../domain/workflow-ids';
import { expectSafeError, SLEEPER, waitUntil } from './support/scenario';
import { listDir, makeRepo, processCwd } from './support/world';

const { harness } = harnessesPerTest();

describe('hosts are records', () => {
  it('a worker registers its host at start and beats; GET /v1/hosts (operator) says which are live, a page at a time', async () => {
    const h = await harness();
    const other = h.spawnWorker({
      TWS_HOST_ID: 'host-beats',
      TWS_WORKSPACE_ROOT: `${h.scratch}/beats-root`,
      TWS_HOST_HEARTBEAT_MS: '300',
    });
    await waitUntil(
      async () => (await h.pool.query("SELECT 1 FROM hosts WHERE host_id = 'host-beats'")).rowCount === 1,
      'the spawned worker registered',
    );
    // Its worker set up the host's own schedules before it registered, so a host started any way has them.
    for (const prefix of [ORPHAN_SWEEP_SCHEDULE_ID, RECONCILE_SCHEDULE_ID, IDLE_RELEASE_SCHEDULE_ID]) {
      const schedule = await h.temporal.schedule.getHandle(`${prefix}-host-beats`).describe();
      expect(schedule.action, prefix).toMatchObject({
        taskQueue: h.config.taskQueue,
        args: [{ hostId: 'host-beats' }],
      });
    }
    const listed = await h.api('GET', '/v1/hosts', undefined, OPERATOR_TOKEN);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    const byId = Object.fromEntries(listed.body.items.map((x: any) => [x.hostId, x]));
    expect(byId[h.config.hostId]).toMatchObject({
      live: true,
      workspaceRoot: h.config.workspaceRoot,
      executors: ['worktree', 'local', 'ssh'],
    });
    expect(byId['host-beats']).toMatchObject({ live: true, workspaceRoot: `${h.scratch}/beats-root` });
    expect(typeof byId['host-beats'].version).toBe('string');
    expect((await h.api('GET', '/v1/hosts')).status).toBe(403);
    // The operator CLI reads the same list.
    const cli = await promisify(execFile)(path.resolve('bin/tws.mjs'), ['hosts', '--json'], {
      env: { ...process.env, TWS_API_URL: h.baseUrl, TWS_OPERATOR_TOKEN: OPERATOR_TOKEN },
      encoding: 'utf8',
    });
    expect(
      JSON.parse(cli.stdout)
        .map((x: any) => x.hostId)
        .sort(),
    ).toEqual([h.config.hostId, 'host-beats'].sort());

    // The heartbeat moves lastSeenAt on; keyset pages of one host each cover both.
    const seen = (await h.pool.query("SELECT last_seen_at FROM hosts WHERE host_id = 'host-beats'")).rows[0]
      .last_seen_at as Date;
    await waitUntil(
      async () =>
        (await h.pool.query("SELECT last_seen_at FROM hosts WHERE host_id = 'host-beats'")).rows[0].last_seen_at > seen,
      'a heartbeat',
      5_000,
    );
    const first = await h.api('GET', '/v1/hosts?limit=1', undefined, OPERATOR_TOKEN);
    const second = await h.api('GET', `/v1/hosts?limit=1&cursor=${first.body.nextCursor}`, undefined, OPERATOR_TOKEN);
    expect([...first.body.items, ...second.body.items].map((x: any) => x.hostId).sort()).toEqual(
      [h.config.hostId, 'host-beats'].sort(),
    );
    expect(second.body.nextCursor).toBeNull();

    // Killed, it stops beating: within three of its intervals it is no longer live.
    other.kill('SIGKILL');
    await waitUntil(
      async () => {
        const hosts = (await h.api('GET', '/v1/hosts', undefined, OPERATOR_TOKEN)).body.items;
        return hosts.find((x: any) => x.hostId === 'host-beats')?.live === false;
      },
      'the killed host is not live',
      10_000,
    );
  });
});

/**
 * Three processes as three hosts on one machine: a gateway with host id G (the harness's, holding
 * no repository), and workers A and B, each with its own workspace root and repository root.
 */
async function threeHosts() {
  const h = await harness({}, { inProcessWorker: false });
  const hostA = {
    id: `a-${h.config.hostId}`,
    root: path.join(h.scratch, 'root-a'),
    repos: path.join(h.scratch, 'repos-a'),
  };
  const hostB = {
    id: `b-${h.config.hostId}`,
    root: path.join(h.scratch, 'root-b'),
    repos: path.join(h.scratch, 'repos-b'),
  };
  for (const dir of [hostA.root, hostB.root, hostA.repos, hostB.repos]) mkdirSync(dir, { recursive: true });
  const workerEnv = (host: typeof hostA) => ({
    TWS_HOST_ID: host.id,
    TWS_WORKSPACE_ROOT: host.root,
    TWS_LOG_DIR: path.join(host.root, '..', `logs-${host.id}`),
    TWS_REPOSITORY_ROOTS: host.repos,
    TWS_HOST_HEARTBEAT_MS: '300',
  });
  const workers = { a: h.spawnWorker(workerEnv(hostA)), b: h.spawnWorker(workerEnv(hostB)) };
  const restartB = () => (workers.b = h.spawnWorker(workerEnv(hostB)));
  // The gateway's own roots hold neither: a check that ran in the gateway would refuse both.
  const gateway = await h.spawnGateway({
    TWS_REPOSITORY_ROOTS: path.join(h.scratch, 'repos-g'),
    TWS_CLEANUP_RETRY_WAITS_MS: '500',
    TWS_CLEANUP_MAX_ATTEMPTS: '200',
  });
  await waitUntil(
    async () =>
      (await h.pool.query('SELECT 1 FROM hosts WHERE host_id = ANY($1)', [[hostA.id, hostB.id]])).rowCount === 2,
    'both hosts registered',
  );
  return { h, hostA, hostB, workers, restartB, gateway, api: gateway.api };
}

describe('three processes as three hosts', () => {
  let world: Awaited<ReturnType<typeof threeHosts>>;
  const repos: { a?: string; b?: string } = {};
  beforeAll(async () => {
    world = await threeHosts();
  });

  it('a repository is checked on the host that holds it, through its queue; a host that does not answer refuses it host_unavailable, recording nothing', async () => {
    const { h, hostA, hostB, api } = world;
    const alpha = makeRepo(hostA.repos, 'alpha');
    const beta = makeRepo(hostB.repos, 'beta');
    // Several hosts are live: the caller names one.
    const unnamed = await api('POST', '/v1/repositories', { name: 'alpha', path: alpha });
    expect(unnamed.status).toBe(400);
    expect(unnamed.body.error.message).toBe('hostId is required');
    // A's roots decide for A: beta is outside them, alpha inside (the gateway's own roots hold neither).
    const outside = await api('POST', '/v1/repositories', { name: 'beta', path: beta, hostId: hostA.id });
    expect(outside.status).toBe(400);
    expect(outside.body.error.message).toBe('The repository path is outside the allowed repository roots.');
    const onA = await api('POST', '/v1/repositories', { name: 'alpha', path: alpha, hostId: hostA.id });
    expect(onA.status, JSON.stringify(onA.body)).toBe(201);
    const onB = await api('POST', '/v1/repositories', { name: 'beta', path: beta, hostId: hostB.id });
    expect(onB.status, JSON.stringify(onB.body)).toBe(201);
    repos.a = onA.body.id;
    repos.b = onB.body.id;
    expect((await h.pool.query('SELECT host_id FROM repositories WHERE id = $1', [repos.a])).rows[0].host_id).toBe(
      hostA.id,
    );
    expect((await h.pool.query('SELECT host_id FROM repositories WHERE id = $1', [repos.b])).rows[0].host_id).toBe(
      hostB.id,
    );

    // A host nobody serves does not answer: 503 host_unavailable within seconds, no row.
    const gone = makeRepo(hostA.repos, 'gone');
    const started = Date.now();
    const refused = await api('POST', '/v1/repositories', { name: 'gone', path: gone, hostId: 'no-such-host' });
    expect(refused.status).toBe(503);
    expectSafeError(refused.body, 'host_unavailable', [gone, hostA.repos]);
    expect(refused.body.error.recoverable).toBe(true);
    expect(refused.body.error.retryAfterMs).toBeGreaterThan(0);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect((await h.pool.query("SELECT 1 FROM repositories WHERE name = 'gone'")).rowCount).toBe(0);
  });

  it("placement follows the repositories: each task's launch, attach, resume, transition and git status run on its host, under its root only", async () => {
    const { h, hostA, hostB, api } = world;
    const mixed = await api('POST', '/v1/tasks', {
      title: 'both',
      repositories: [{ repositoryId: repos.a }, { repositoryId: repos.b }],
    });
    expect(mixed.status).toBe(400);
    expect(mixed.body.error.message).toBe('The repositories of a task must be on one host.');
    for (const [host, repositoryId, name] of [
      [hostA, repos.a!, 'alpha'],
      [hostB, repos.b!, 'beta'],
    ] as const) {
      const taskId = await newTask(repositoryId);
      tasks.set(host.id, taskId);
      const worktree = path.join(host.root, taskDirName(taskId), name);
      const first = await launchOn(taskId);
      expect(first.body.role).toBe('materialized');
      await expectAgentOn(host, first.body.sessionId, worktree);
      expect(
        (
          await h.pool.query('SELECT host_id, workspace_path FROM task_environments WHERE id = $1', [
            first.body.taskEnvironmentId,
          ])
        ).rows[0],
      ).toEqual({ host_id: host.id, workspace_path: worktree });
      const attached = await launchOn(taskId);
      expect(attached.body.role).toBe('attached');
      await expectAgentOn(host, attached.body.sessionId, worktree);
      const resumed = await api('POST', `/v1/sessions/${attached.body.sessionId}/resume`);
      expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
      expect(resumed.body.execution.hostId).toBe(host.id);
      await expectAgentOn(host, attached.body.sessionId, worktree);
      writeFileSync(path.join(worktree, 'wip.txt'), 'on its host\n');
      const status = await api('GET', `/v1/tasks/${taskId}/git-status`);
      expect(status.status, JSON.stringify(status.body)).toBe(200);
      expect(status.body.repositories[0].files).toEqual([{ path: 'wip.txt', status: '??' }]);
      if (host === hostB) observedOnB = status.body.repositories[0].observedAt;
      // An executor transition (worktree → local) runs on the host too, in its source checkout.
      const moving = await newTask(repositoryId);
      await launchOn(moving);
      const local = await api('POST', `/v1/tasks/${moving}/sessions`, { ...launchBody, executorType: 'local' });
      expect(local.status, JSON.stringify(local.body)).toBe(201);
      expect(local.body.role).toBe('transitioned');
      await expectAgentOn(host, local.body.sessionId, path.join(host.repos, name));
      // Its agent's log is read on its host, for a gateway that is not it: a follow until the agent ends, then the tail.
      const talker = await api('POST', `/v1/tasks/${taskId}/sessions`, {
        ...launchBody,
        command: ['sh', '-c', `echo hello from ${name}; sleep 1; echo bye`],
      });
      expect(talker.status, JSON.stringify(talker.body)).toBe(201);
      const logs = (query: string) =>
        fetch(`${world.gateway.url}/v1/sessions/${talker.body.sessionId}/logs${query}`, {
          headers: { authorization: `Bearer ${USER_TOKEN}` },
        });
      const followed = await logs('?follow=1');
      expect(followed.status).toBe(200);
      expect(await followed.text()).toBe(`hello from ${name}\nbye\n`);
      expect(await (await logs('?tail=1')).text()).toBe('bye\n');
      // Nothing of it anywhere else: not under the other host's root, not under the gateway's.
      const other = host === hostA ? hostB : hostA;
      expect(listDir(other.root)).not.toContain(taskDirName(taskId));
      expect(listDir(h.config.workspaceRoot)).toEqual([]);
    }
  });

  it('a host that is down: its launches are refused host_unavailable without an election and its cleanups wait; both complete once it is back; the other host goes on', async () => {
    const { h, hostA, hostB, workers, restartB, api } = world;
    // A second task on B, with a workspace, to archive while B is down.
    const parked = await newTask(repos.b!);
    const parkedSession = await launchOn(parked);
    const parkedFolder = path.join(hostB.root, taskDirName(parked));
    await expectAgentOn(hostB, parkedSession.body.sessionId, path.join(parkedFolder, 'beta'));

    workers.b.kill('SIGKILL');
    await waitUntil(
      async () =>
        (await api('GET', '/v1/hosts', undefined, OPERATOR_TOKEN)).body.items.find((x: any) => x.hostId === hostB.id)
          ?.live === false,
      'B is not live',
      10_000,
    );

    const taskB = tasks.get(hostB.id)!;
    const sessionsBefore = await sessionCount(taskB);
    const refused = await api('POST', `/v1/tasks/${taskB}/sessions`, launchBody);
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expectSafeError(refused.body, 'host_unavailable', [hostB.root]);
    expect(refused.body.error.recoverable).toBe(true);
    expect(await sessionCount(taskB)).toBe(sessionsBefore);
    // Its git status is the last one observed, said as such (observedAt), without waiting for B.
    const lastSeen = await api('GET', `/v1/tasks/${taskB}/git-status`);
    expect(lastSeen.status, JSON.stringify(lastSeen.body)).toBe(200);
    expect(lastSeen.body.repositories[0].files).toEqual([{ path: 'wip.txt', status: '??' }]);
    expect(lastSeen.body.repositories[0].observedAt).toBe(observedOnB);
    // A delete that must ask B whether its worktrees are dirty is refused too, the task kept.
    const undeleted = await api('DELETE', `/v1/tasks/${taskB}`, undefined, OPERATOR_TOKEN);
    expect(undeleted.status, JSON.stringify(undeleted.body)).toBe(503);
    expectSafeError(undeleted.body, 'host_unavailable', [hostB.root]);
    expect((await api('GET', `/v1/tasks/${taskB}`)).status).toBe(200);
    // A new task's branches are checked on its repositories' host, not by the gateway: B does not answer.
    const tasksBefore = (await h.pool.query('SELECT count(*)::int AS n FROM tasks')).rows[0].n;
    const uncreated = await api('POST', '/v1/tasks', {
      title: 'on B while down',
      repositories: [{ repositoryId: repos.b! }],
    });
    expect(uncreated.status, JSON.stringify(uncreated.body)).toBe(503);
    expectSafeError(uncreated.body, 'host_unavailable', [hostB.root]);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM tasks')).rows[0].n).toBe(tasksBefore);

    const archived = await api('POST', `/v1/tasks/${parked}/archive`, {});
    expect(archived.status, JSON.stringify(archived.body)).toBe(202);
    await waitUntil(
      async () => {
        const job = (
          await h.pool.query('SELECT state, last_error, attempts FROM cleanup_jobs WHERE operation_id = $1', [
            archived.body.operationId,
          ])
        ).rows[0];
        return job?.state === 'retry_wait' && job.last_error === 'host_unavailable' && job.attempts >= 2;
      },
      'the cleanup waits in its retry schedule',
      30_000,
    );
    expect(listDir(parkedFolder)).toContain('beta');

    // A is unaffected meanwhile.
    const taskA = tasks.get(hostA.id)!;
    const onA = await launchOn(taskA);
    expect(onA.body.role).toBe('attached');
    await expectAgentOn(hostA, onA.body.sessionId, path.join(hostA.root, taskDirName(taskA), 'alpha'));

    restartB();
    await waitUntil(
      async () =>
        (await h.pool.query('SELECT state FROM cleanup_jobs WHERE operation_id = $1', [archived.body.operationId]))
          .rows[0]?.state === 'succeeded',
      'the waiting cleanup finished on B',
      60_000,
    );
    expect(listDir(parkedFolder)).toEqual([]);
    const again = await launchOn(taskB);
    expect(again.body.role).toBe('attached');
    await expectAgentOn(hostB, again.body.sessionId, path.join(hostB.root, taskDirName(taskB), 'beta'));
  });

  it("archive and delete of each host's task remove only under that host's root; the orphan sweep of A never looks at B's root", async () => {
    const { h, hostA, hostB, api } = world;
    const old = Date.now() / 1000 - 7 * 24 * 3600;
    for (const host of [hostA, hostB]) {
      mkdirSync(path.join(host.root, `stray-${host === hostA ? 'a' : 'b'}`));
      utimesSync(path.join(host.root, `stray-${host === hostA ? 'a' : 'b'}`), old, old);
    }
    // The route sweeps the host it is given, on that host; an unknown host is a 404.
    expect((await api('POST', '/v1/orphan-sweep', { hostId: 'no-such-host' }, OPERATOR_TOKEN)).status).toBe(404);
    const wouldB = await api('POST', '/v1/orphan-sweep', { hostId: hostB.id, dryRun: true }, OPERATOR_TOKEN);
    expect(wouldB.status, JSON.stringify(wouldB.body)).toBe(200);
    expect(wouldB.body.removed).toEqual(['stray-b']);
    const sweptA = await api('POST', '/v1/orphan-sweep', { hostId: hostA.id }, OPERATOR_TOKEN);
    expect(sweptA.status, JSON.stringify(sweptA.body)).toBe(200);
    const swept = sweptA.body;
    expect(swept.removed).toEqual(['stray-a']);
    const rootBNames = listDir(hostB.root);
    for (const k of swept.kept) expect(listDir(hostA.root)).toContain(k.name);
    expect(rootBNames).toContain('stray-b');

    for (const host of [hostA, hostB]) {
      const taskId = tasks.get(host.id)!;
      const other = host === hostA ? hostB : hostA;
      const otherBefore = listDir(other.root);
      const archived = await api('POST', `/v1/tasks/${taskId}/archive`, {});
      expect(archived.status, JSON.stringify(archived.body)).toBe(202);
      await waitUntil(
        async () =>
          (await h.pool.query('SELECT state FROM cleanup_jobs WHERE operation_id = $1', [archived.body.operationId]))
            .rows[0]?.state === 'succeeded',
        `archive on ${host.id}`,
      );
      const deleted = await api('DELETE', `/v1/tasks/${taskId}?discardChanges=true`, undefined, OPERATOR_TOKEN);
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
      await waitUntil(
        async () =>
          (await h.pool.query('SELECT state FROM cleanup_jobs WHERE operation_id = $1', [deleted.body.operationId]))
            .rows[0]?.state === 'succeeded',
        `delete on ${host.id}`,
      );
      expect(listDir(host.root)).not.toContain(taskDirName(taskId));
      expect(listDir(other.root)).toEqual(otherBefore);
    }
  });

  const tasks = new Map<string, string>();
  let observedOnB: string | undefined;
  const launchBody = { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER };
  async function newTask(repositoryId: string): Promise<string> {
    const res = await world.api('POST', '/v1/tasks', { title: 'on a host', repositories: [{ repositoryId }] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id;
  }
  async function launchOn(taskId: string) {
    const res = await world.api('POST', `/v1/tasks/${taskId}/sessions`, launchBody);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res;
  }
  async function sessionCount(taskId: string): Promise<number> {
    return (await world.h.pool.query('SELECT count(*)::int AS n FROM sessions WHERE task_id = $1', [taskId])).rows[0].n;
  }
  /** The session's running agent: its row says this host, and /proc says it works in `cwd`. */
  async function expectAgentOn(host: { id: string }, sessionId: string, cwd: string): Promise<void> {
    let row: { host_id: string; pid: number } | undefined;
    await waitUntil(async () => {
      row = (
        await world.h.pool.query(
          "SELECT host_id, pid FROM executions WHERE session_id = $1 AND status = 'running' ORDER BY started_at DESC LIMIT 1",
          [sessionId],
        )
      ).rows[0];
      return row !== undefined;
    }, `the agent of ${sessionId}`);
    expect(row!.host_id).toBe(host.id);
    expect(processCwd(row!.pid)).toBe(cwd);
  }
});
