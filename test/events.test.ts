/**
 * GET /v1/events: the changes of tasks, sessions, executions, merges and cleanup jobs as
 * Server-Sent Events, with ids and states only; a reconnect with Last-Event-ID gets exactly what
 * it missed, an id past retention a reset, and a LISTEN connection that drops loses nothing.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pruneEvents } from '../db/events';
import { taskBranchName } from '../domain/task-layout';
import { LISTENER_NAME } from '../client/gateway/event-hub';
import { archive, waitForJob } from './support/cleanup';
import { EventReader } from './support/event-stream';
import { finish, taskWithCommits } from './support/finishing';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { buildGateway } from '../client/gateway/app';
import { agentEnded, createTask, launch, repositories, waitUntil } from './support/scenario';

let h: Harness;
let nextRepo: ReturnType<typeof repositories>;
const readers: EventReader[] = [];

beforeAll(async () => {
  h = await createHarness();
  nextRepo = repositories(() => h, 'events');
});
afterAll(async () => {
  for (const reader of readers) reader.close();
  await h?.close();
});

async function follow(opts: Parameters<typeof EventReader.open>[1] & { baseUrl?: string } = {}): Promise<EventReader> {
  const reader = await EventReader.open({ baseUrl: opts.baseUrl ?? h.baseUrl }, opts);
  readers.push(reader);
  expect(reader.response.status).toBe(200);
  return reader;
}

const listeners = async (): Promise<number[]> =>
  (
    await h.pool.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
      [LISTENER_NAME],
    )
  ).rows.map((row) => row.pid);

/** The gateway's listening connection's backend, once it is the only one. */
async function listenerPid(): Promise<number> {
  let pids: number[] = [];
  await waitUntil(async () => (pids = await listeners()).length === 1, 'one events LISTEN connection');
  return pids[0]!;
}

describe('GET /v1/events', () => {
  it('needs a token: none or a wrong one is 401, and the stream opens with its headers and retry', async () => {
    expect((await EventReader.open(h, { token: null })).response.status).toBe(401);
    expect((await EventReader.open(h, { token: 'not-a-token' })).response.status).toBe(401);
    const reader = await follow();
    expect(reader.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(reader.response.headers.get('cache-control')).toBe('no-store');
    expect(reader.response.headers.get('x-accel-buffering')).toBe('no');
    await reader.until((r) => r.retry === 2000, 'retry: 2000');
  });

  it('a task created, launched and archived is followed by ids and states, never its title, path or branch', async () => {
    const reader = await follow();
    const repo = await nextRepo();
    const title = 'events secret title 7f3a';
    const taskId = await createTask(h, [repo.id], { title });
    expect(await reader.change('task', taskId, 'created', 'active')).toMatchObject({ taskId });

    const launched = await launch(h, taskId, { command: ['true'] });
    expect(launched.status, JSON.stringify(launched.body)).toBe(201);
    const { sessionId, executionId } = launched.body;
    expect(await reader.change('session', sessionId, 'created')).toMatchObject({ taskId });
    expect(await reader.change('execution', executionId, 'created')).toMatchObject({ taskId, state: 'running' });
    await agentEnded(h, sessionId);
    await reader.change('execution', executionId, 'updated', 'exited');

    const job = await archive(h, taskId);
    await waitForJob(h, job.operationId);
    await reader.change('task', taskId, 'updated', 'archived');
    await reader.change('cleanup_job', job.operationId, 'created');
    expect(await reader.change('cleanup_job', job.operationId, 'updated', 'succeeded')).toMatchObject({ taskId });

    // Ids strictly increase; nothing a person or an agent wrote, nor where it lives.
    const ids = reader.changes.map((c) => c.eventId);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    for (const secret of [title, repo.dir, repo.name, h.config.workspaceRoot, taskBranchName(taskId)])
      expect(reader.raw).not.toContain(secret);
  });

  it('a merge is followed from running to merged', async () => {
    const reader = await follow();
    const w = await taskWithCommits(h, 'events-merge', [{ 'a.txt': 'a\n' }]);
    const res = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'squash' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await reader.change('merge', res.body.operationId, 'created', 'running');
    const merged = await reader.change('merge', res.body.operationId, 'updated', 'merged');
    expect(merged.taskId).toBe(w.taskId);
    for (const secret of [w.repo, w.branch, w.worktree]) expect(reader.raw).not.toContain(secret);
  });

  it('two clients at once each get every event, in the same order', async () => {
    const [a, b] = [await follow(), await follow()];
    const repo = await nextRepo();
    const tasks = [await createTask(h, [repo.id]), await createTask(h, [repo.id]), await createTask(h, [repo.id])];
    for (const reader of [a, b]) for (const id of tasks) await reader.change('task', id, 'created');
    const upTo = (r: EventReader) => {
      const last = r.changes.find((c) => c.id === tasks[2])!.eventId;
      return r.changes.filter((c) => c.eventId <= last);
    };
    expect(upTo(a)).toEqual(upTo(b));
  });

  it('reconnecting with Last-Event-ID gets exactly the events missed, none lost and none twice', async () => {
    const watcher = await follow();
    const first = await follow();
    const repo = await nextRepo();
    const before = await createTask(h, [repo.id]);
    await first.change('task', before, 'created');
    const lastSeen = first.lastId!;
    first.close();

    // While it is away: tasks made, one archived.
    const missed = [await createTask(h, [repo.id]), await createTask(h, [repo.id])];
    const job = await archive(h, missed[0]!);
    await waitForJob(h, job.operationId);
    await watcher.change('cleanup_job', job.operationId, 'updated', 'succeeded');

    const again = await follow({ lastEventId: lastSeen });
    const end = (await again.change('cleanup_job', job.operationId, 'updated', 'succeeded')).eventId;
    const between = (r: EventReader) => r.changes.filter((c) => c.eventId > Number(lastSeen) && c.eventId <= end);
    expect(between(again)[0]!).toMatchObject({ kind: 'task', id: missed[0], change: 'created' });
    expect(between(again)).toEqual(between(watcher));
    expect(again.changes.some((c) => c.eventId <= Number(lastSeen))).toBe(false);
  });

  it('an id past retention, or ahead of the newest, gets one reset', async () => {
    const repo = await nextRepo();
    await createTask(h, [repo.id]);
    const oldest = Number((await h.pool.query('SELECT min(id) AS id FROM events')).rows[0].id);
    // The oldest events age past the retention and are pruned as the gateway's sweep does.
    await h.pool.query(`UPDATE events SET at = now() - interval '25 hours' WHERE id <= $1`, [oldest + 1]);
    expect(await pruneEvents(h.pool)).toBeGreaterThanOrEqual(2);

    for (const lastEventId of [String(oldest), '999999999', 'not-an-id']) {
      const reader = await follow({ lastEventId });
      await reader.until((r) => r.events.find((e) => e.event === 'reset'), `a reset for ${lastEventId}`);
      expect(reader.events.filter((e) => e.event === 'reset')).toEqual([
        { event: 'reset', data: '{}', id: expect.stringMatching(/^[0-9]+$/) },
      ]);
      expect(reader.changes).toEqual([]);
      // It goes on live from there.
      const taskId = await createTask(h, [repo.id]);
      await reader.change('task', taskId, 'created');
    }
  });

  it('an event whose transaction commits after a later one is held for, then sent first: none skipped', async () => {
    const reader = await follow();
    const repo = await nextRepo();
    // A writer that took its event id, and is slow to commit (a transaction held open).
    const slow = await h.pool.connect();
    const slowTask = randomUUID();
    try {
      await slow.query('BEGIN');
      await slow.query(`INSERT INTO tasks (id, title) VALUES ($1, 'held open')`, [slowTask]);
      const quick = await createTask(h, [repo.id]);
      const committed = (await h.pool.query('SELECT clock_timestamp() AS t')).rows[0].t;
      // The gateway reads the change log again and again while the gap stays open (it would not
      // once it had moved past it), and sends nothing after the gap.
      await waitUntil(
        async () => {
          const res = await h.pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database() AND query_start > $2`,
            [LISTENER_NAME, committed],
          );
          return res.rows.length > 0;
        },
        'the gateway holding back at the gap (reading the change log after the quick commit)',
        10_000,
      );
      expect(reader.changes.find((c) => c.id === quick)).toBeUndefined();
      await slow.query('COMMIT');
      const held = await reader.change('task', slowTask, 'created');
      const sent = await reader.change('task', quick, 'created');
      expect(held.eventId).toBeLessThan(sent.eventId);
      expect(reader.changes.map((c) => c.id).indexOf(slowTask)).toBeLessThan(
        reader.changes.map((c) => c.id).indexOf(quick),
      );
    } finally {
      await slow.query('ROLLBACK'); // after the COMMIT: a warning only; after a failure: the held row goes
      slow.release();
    }
  });

  it('a LISTEN connection that drops loses no event: it listens again and catches up from the table', async () => {
    const reader = await follow();
    const repo = await nextRepo();
    const pid = await listenerPid();
    await h.pool.query('SELECT pg_terminate_backend($1)', [pid]);
    // Made while the gateway is not listening.
    const taskId = await createTask(h, [repo.id]);
    await reader.change('task', taskId, 'created');
    expect(await listenerPid()).not.toBe(pid);
    const later = await createTask(h, [repo.id]);
    await reader.change('task', later, 'created');
  });

  it('closing a gateway ends its streams and its LISTEN connection at once', async () => {
    const gateway = await buildGateway({
      config: h.config,
      pool: h.pool,
      temporal: h.temporal,
      logger: false,
      tokens: { user: USER_TOKEN, operator: OPERATOR_TOKEN },
    });
    await gateway.listen({ host: '127.0.0.1', port: 0 });
    const port = (gateway.server.address() as AddressInfo).port;
    const reader = await follow({ baseUrl: `http://127.0.0.1:${port}` });
    await reader.until((r) => r.retry !== null, 'the stream open');
    expect(await listeners()).toHaveLength(2);
    const started = Date.now();
    await gateway.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    await reader.until((r) => r.ended, 'the stream ended by the close');
    await listenerPid(); // only the harness's gateway's is left
  });
});
