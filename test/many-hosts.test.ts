/**
 * Many hosts [issue 15]: hosts are records, repositories belong to a host, a task's work is placed
 * on its repositories' host, and a host that is down is refused or waited for; proven with real
 * processes as hosts on one machine.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { harnessesPerTest, OPERATOR_TOKEN } from './support/harness';
import { expectSafeError, waitUntil } from './support/scenario';
import { makeRepo } from './support/world';

const { harness } = harnessesPerTest();

describe('hosts are records', () => {
  it('a worker registers its host at start and beats; GET /v1/hosts (operator) says which are live, a page at a time', async () => {
    const h = await harness();
    const other = h.spawnWorker({ TWS_HOST_ID: 'host-beats', TWS_WORKSPACE_ROOT: `${h.scratch}/beats-root`, TWS_HOST_HEARTBEAT_MS: '300' });
    await waitUntil(async () => (await h.pool.query("SELECT 1 FROM hosts WHERE host_id = 'host-beats'")).rowCount === 1, 'the spawned worker registered');
    const listed = await h.api('GET', '/v1/hosts', undefined, OPERATOR_TOKEN);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    const byId = Object.fromEntries(listed.body.items.map((x: any) => [x.hostId, x]));
    expect(byId[h.config.hostId]).toMatchObject({ live: true, workspaceRoot: h.config.workspaceRoot, executors: ['worktree', 'local'] });
    expect(byId['host-beats']).toMatchObject({ live: true, workspaceRoot: `${h.scratch}/beats-root` });
    expect(typeof byId['host-beats'].version).toBe('string');
    expect((await h.api('GET', '/v1/hosts')).status).toBe(403);

    // The heartbeat moves lastSeenAt on; keyset pages of one host each cover both.
    const seen = (await h.pool.query("SELECT last_seen_at FROM hosts WHERE host_id = 'host-beats'")).rows[0].last_seen_at as Date;
    await waitUntil(async () => (await h.pool.query("SELECT last_seen_at FROM hosts WHERE host_id = 'host-beats'")).rows[0].last_seen_at > seen, 'a heartbeat', 5_000);
    const first = await h.api('GET', '/v1/hosts?limit=1', undefined, OPERATOR_TOKEN);
    const second = await h.api('GET', `/v1/hosts?limit=1&cursor=${first.body.nextCursor}`, undefined, OPERATOR_TOKEN);
    expect([...first.body.items, ...second.body.items].map((x: any) => x.hostId).sort()).toEqual([h.config.hostId, 'host-beats'].sort());
    expect(second.body.nextCursor).toBeNull();

    // Killed, it stops beating: within three of its intervals it is no longer live.
    other.kill('SIGKILL');
    await waitUntil(async () => {
      const hosts = (await h.api('GET', '/v1/hosts', undefined, OPERATOR_TOKEN)).body.items;
      return hosts.find((x: any) => x.hostId === 'host-beats')?.live === false;
    }, 'the killed host is not live', 10_000);
  });
});

/**
 * Three processes as three hosts on one machine: a gateway with host id G (the harness's, holding
 * no repository), and workers A and B, each with its own workspace root and repository root.
 */
async function threeHosts() {
  const h = await harness({}, { inProcessWorker: false });
  const hostA = { id: `a-${h.config.hostId}`, root: path.join(h.scratch, 'root-a'), repos: path.join(h.scratch, 'repos-a') };
  const hostB = { id: `b-${h.config.hostId}`, root: path.join(h.scratch, 'root-b'), repos: path.join(h.scratch, 'repos-b') };
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
  const gateway = await h.spawnGateway({ TWS_REPOSITORY_ROOTS: path.join(h.scratch, 'repos-g'), TWS_CLEANUP_RETRY_WAITS_MS: '500', TWS_CLEANUP_MAX_ATTEMPTS: '200' });
  await waitUntil(async () => (await h.pool.query('SELECT 1 FROM hosts WHERE host_id = ANY($1)', [[hostA.id, hostB.id]])).rowCount === 2, 'both hosts registered');
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
    expect((await h.pool.query('SELECT host_id FROM repositories WHERE id = $1', [repos.a])).rows[0].host_id).toBe(hostA.id);
    expect((await h.pool.query('SELECT host_id FROM repositories WHERE id = $1', [repos.b])).rows[0].host_id).toBe(hostB.id);

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
});
