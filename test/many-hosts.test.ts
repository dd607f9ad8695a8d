/**
 * Many hosts [issue 15]: hosts are records, repositories belong to a host, a task's work is placed
 * on its repositories' host, and a host that is down is refused or waited for; proven with real
 * processes as hosts on one machine.
 */
import { describe, expect, it } from 'vitest';
import { harnessesPerTest, OPERATOR_TOKEN } from './support/harness';
import { waitUntil } from './support/scenario';

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
