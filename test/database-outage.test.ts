/**
 * The database and the engine going away: the gateway and the worker keep running,
 * every route answers a typed 503, /readyz names the missing part, and once PostgreSQL is back the
 * same processes serve again and a cleanup answered 202 before the outage finishes.
 */
import { agentIsolation, agentNetwork } from '../executors/host/agent-sandbox';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGateway } from '../client/gateway/app';
import type { PostgresService } from '../client/launcher/postgres-service';
import { taskDirName } from '../domain/task-layout';
import { createHarness, freePort, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { startPostgresAt } from './support/processes';
import { createTask, expectSafeError, launch, registerRepo, waitUntil } from './support/scenario';
import { makeRepo, processAlive, worktreePaths } from './support/world';

let pgDir: string;
let pgPort: number;
/** The server running now: the first one is killed, its successor is stopped after the file. */
let postgres: PostgresService | null = null;
let h: Harness;
const children: ChildProcess[] = [];

const startPostgres = () => startPostgresAt(path.join(pgDir, 'data'), pgPort);

const postmasterPid = (): number =>
  Number(readFileSync(path.join(pgDir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);

beforeAll(async () => {
  pgDir = await mkdtemp(path.join(os.tmpdir(), 'tws-outage-pg-'));
  await chmod(pgDir, 0o755); // embedded PostgreSQL runs as the postgres user when tests run as root
  pgPort = await freePort();
  postgres = await startPostgres();
  h = await createHarness({}, { postgresServerUrl: postgres.serverUrl, inProcessWorker: false });
}, 180_000);

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await h?.close().catch(() => {});
  await postgres?.stop().catch(() => {});
  await rm(pgDir, { recursive: true, force: true });
}, 180_000);

/** A git that announces a worktree removal (a file appears) and takes its time over it, holding the repository lock. */
function slowRemovalGit(dir: string): { binary: string; removing: string } {
  const binary = path.join(dir, 'git-slow-remove');
  const removing = path.join(dir, 'removing');
  writeFileSync(
    binary,
    `#!/usr/bin/env bash\nif [ "$1" = "worktree" ] && [ "$2" = "remove" ]; then touch "${removing}"; sleep 4; fi\nexec git "$@"\n`,
  );
  chmodSync(binary, 0o755);
  return { binary, removing };
}

describe('Temporal unreachable', () => {
  it('a route that needs the engine answers 503 engine_unavailable; /readyz names temporal', async () => {
    const repo = makeRepo(h.scratch, 'engine');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'engine')]);

    // The same gateway, with a client of a Temporal server that is not there (nothing listens on
    // the port). Two tries per call: the client's default back-off would take about 15 s to give up.
    const connection = Connection.lazy({
      address: `127.0.0.1:${await freePort()}`,
      interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 2 }))],
    });
    const app = await buildGateway({
      config: h.config,
      pool: h.pool,
      temporal: new Client({ connection, namespace: h.config.temporalNamespace }),
      logger: false,
      tokens: { user: USER_TOKEN, operator: OPERATOR_TOKEN },
    });
    try {
      const archived = await app.inject({
        method: 'POST',
        url: `/v1/tasks/${taskId}/archive`,
        headers: { authorization: `Bearer ${USER_TOKEN}` },
        payload: {},
      });
      expect(archived.statusCode, archived.body).toBe(503);
      expectSafeError(archived.json(), 'engine_unavailable', [USER_TOKEN, OPERATOR_TOKEN, h.scratch, repo]);
      expect(archived.json().error).toMatchObject({ recoverable: true, retryAfterMs: 2000, action: 'retry' });
      expect(archived.headers['retry-after']).toBe('2');
      // Nothing was decided: the task is still active.
      expect((await h.api('GET', `/v1/tasks/${taskId}`)).body.state).toBe('active');

      const ready = await app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(503);
      expect(ready.json()).toEqual({
        status: 'not_ready',
        database: true,
        temporal: false,
        reason: 'temporal_unreachable',
        agentIsolation: 'none',
        agentNetwork: 'host',
      });
    } finally {
      await app.close();
      await connection.close();
    }
  });
});

describe('PostgreSQL killed and started again', () => {
  // Its own waits have deadlines that say what they saw (60 + 15 + 30 + 60 s): on a loaded machine
  // they took more than the suite's 120 s together, and its timeout cut them short unsaid.
  it('the gateway and the worker survive, answer 503 service_unavailable meanwhile, serve again with the same pids, and a 202 archive finishes', async () => {
    const git = slowRemovalGit(pgDir);
    const gateway = await h.spawnGateway({ TWS_GIT_BINARY: git.binary });
    const worker = h.spawnWorker({ TWS_GIT_BINARY: git.binary });
    children.push(gateway.child, worker);

    const repo = makeRepo(h.scratch, 'outage');
    const via = { ...h, api: gateway.api };
    const taskId = await createTask(via, [await registerRepo(via, repo, 'outage')]);
    const launched = await launch(via, taskId);
    expect(launched.status, JSON.stringify(launched.body)).toBe(201);
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), 'outage');
    expect(existsSync(worktree)).toBe(true);

    // Archive (202), then kill the database while the worker holds the repository lock's
    // connection inside `git worktree remove`: that checked-out client loses its server.
    const accepted = await gateway.api('POST', `/v1/tasks/${taskId}/archive`, {});
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    await waitUntil(async () => existsSync(git.removing), 'the cleanup to reach git worktree remove', 60_000);
    const killedPid = postmasterPid();
    process.kill(killedPid, 'SIGKILL');
    await waitUntil(async () => !processAlive(killedPid), 'the postmaster to die', 10_000);

    // The outage: typed answers, no process lost.
    const outageStart = Date.now();
    const missing = await gateway.api('GET', `/v1/tasks/${taskId}`);
    expect(missing.status, JSON.stringify(missing.body)).toBe(503);
    expectSafeError(missing.body, 'service_unavailable', [
      USER_TOKEN,
      OPERATOR_TOKEN,
      h.databaseUrl,
      `127.0.0.1:${pgPort}`,
      'postgres:outage',
    ]);
    expect(missing.body.error).toMatchObject({ recoverable: true, retryAfterMs: 2000, action: 'retry' });
    const raw = await fetch(`${gateway.url}/v1/tasks/${taskId}`, {
      headers: { authorization: `Bearer ${USER_TOKEN}` },
    });
    expect(raw.status).toBe(503);
    expect(raw.headers.get('retry-after')).toBe('2');
    // A write and an operator route too: nothing is a 500.
    expect((await gateway.api('POST', '/v1/boards', { name: 'during the outage' })).body.error.code).toBe(
      'service_unavailable',
    );
    expect((await gateway.api('GET', '/v1/cleanup-jobs', undefined, OPERATOR_TOKEN)).status).toBe(503);
    // A worker that starts while the database is gone runs too: it re-identifies its agents later.
    const lateWorker = h.spawnWorker({ TWS_GIT_BINARY: git.binary });
    children.push(lateWorker);
    const notReady = await gateway.api('GET', '/readyz', undefined, null);
    expect(notReady).toEqual({
      status: 503,
      body: {
        status: 'not_ready',
        database: false,
        temporal: true,
        reason: 'database_unreachable',
        agentIsolation: await agentIsolation(h.config.agentSandbox),
        agentNetwork: (await agentNetwork(h.config.agentSandbox, h.config.agentNetwork)).policy,
      },
    });
    // Long enough for the cleanup's record steps to meet the outage for longer than the old six
    // tries lasted (about 6 s; the slow git ends 4 s after the kill).
    while (Date.now() - outageStart < 15_000) {
      expect((await gateway.api('GET', `/v1/tasks/${taskId}`)).status).toBe(503);
      await new Promise((r) => setTimeout(r, 500));
    }
    for (const child of [gateway.child, worker, lateWorker]) expect(child.exitCode ?? child.signalCode).toBeNull();

    // PostgreSQL back on the same data dir and port: the same processes serve again by themselves.
    postgres = await startPostgres();
    await waitUntil(
      async () => (await gateway.api('GET', `/v1/tasks/${taskId}`)).status === 200,
      'the gateway to answer 200 again',
      30_000,
    );
    expect((await gateway.api('GET', '/readyz', undefined, null)).status).toBe(200);

    // The archive answered 202 before the outage finishes: the worktree is gone, the branch kept.
    const deadline = Date.now() + 60_000;
    let job: any;
    for (;;) {
      job = (await gateway.api('GET', `/v1/cleanup-jobs/${accepted.body.operationId}`)).body;
      if (['succeeded', 'needs_operator'].includes(job?.state) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(job.state, JSON.stringify(job)).toBe('succeeded');
    expect(existsSync(worktree)).toBe(false);
    expect(worktreePaths(repo)).toEqual([repo]);
    expect((await gateway.api('GET', `/v1/tasks/${taskId}`)).body.state).toBe('archived');

    for (const child of [gateway.child, worker, lateWorker]) {
      expect(child.exitCode ?? child.signalCode).toBeNull();
      expect(processAlive(child.pid!)).toBe(true);
    }
  }, 240_000);
});
