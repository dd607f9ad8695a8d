/**
 * Lists and links: every list pages newest first by keyset with an
 * opaque cursor (`{ items, nextCursor }`, `limit` 1 to 200), filters checked against their
 * types and enums, and a bad query answered 400 with nothing changed; session and cleanup-job
 * answers link to their run in the Temporal UI (TWS_TEMPORAL_UI_URL).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../domain/config';
import { SessionIdAttr, TaskIdAttr } from '../domain/search-attributes';
import { archive, waitForJob } from './support/cleanup';
import { temporalLinks } from '../client/gateway/engine/temporal-links';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { createTask, expectSafeError, launch, registerRepo } from './support/scenario';
import { makeRepo } from './support/world';

/** A UI behind a path prefix, as a proxied deployment has it: links must keep the prefix. */
const UI_URL = 'https://temporal.example.test/ui';

let h: Harness;
let n = 0;

beforeAll(async () => {
  h = await createHarness({ temporalUiUrl: UI_URL });
});
afterAll(async () => h?.close());

async function repo() {
  const name = `lists-${++n}`;
  const dir = makeRepo(h.scratch, name);
  return { dir, id: await registerRepo(h, dir, name), name };
}

/** Walks a list with `limit`, following nextCursor: every page's items, and the pages' sizes. */
async function walk(route: string, limit: number): Promise<{ items: any[]; sizes: number[] }> {
  const items: any[] = [];
  const sizes: number[] = [];
  let cursor: string | null = null;
  do {
    const sep = route.includes('?') ? '&' : '?';
    const res: { status: number; body: any } = await h.api(
      'GET',
      `${route}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['items', 'nextCursor']);
    items.push(...res.body.items);
    sizes.push(res.body.items.length);
    cursor = res.body.nextCursor;
    expect(sizes.length).toBeLessThan(100);
  } while (cursor !== null);
  return { items, sizes };
}

/** The ids the database holds, in the lists' order (newest first, then id). */
const idsInOrder = async (sql: string, params: unknown[] = []) =>
  (await h.pool.query<{ id: string }>(`${sql} ORDER BY created_at DESC, id DESC`, params)).rows.map((r) => r.id);

/** What an answer shows must locate nothing: no path, no branch, no token. */
function expectNoLeak(body: unknown) {
  const text = JSON.stringify(body);
  expect(text).not.toContain(h.scratch);
  expect(text).not.toMatch(/\/tmp\/|\/work\/|refs\/heads|tws\//);
  for (const token of [USER_TOKEN, OPERATOR_TOKEN]) expect(text).not.toContain(token);
}

/** The link of an answer: the configured UI, the namespace, the workflow id as one path segment. Returns the workflow id. */
function workflowIdOfLink(links: any): string {
  const url = new URL(links.temporal);
  expect(
    `${url.origin}${url.pathname}`.startsWith(`${UI_URL}/namespaces/${h.config.temporalNamespace}/workflows/`),
  ).toBe(true);
  const segment = url.pathname.slice(`/ui/namespaces/${h.config.temporalNamespace}/workflows/`.length);
  expect(segment).not.toContain('/');
  return decodeURIComponent(segment);
}

const rowCounts = async () =>
  (
    await h.pool.query(
      'SELECT (SELECT count(*) FROM tasks) t, (SELECT count(*) FROM sessions) s, (SELECT count(*) FROM boards) b, (SELECT count(*) FROM repositories) r, (SELECT count(*) FROM cleanup_jobs) j, (SELECT count(*) FROM tasks WHERE archived_at IS NOT NULL) a',
    )
  ).rows[0];

const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('GET /v1/repositories and /v1/boards', () => {
  it('pages repositories newest first across pages, as POST shows them: never a path', async () => {
    for (let i = 0; i < 5; i++) await repo();
    const { items, sizes } = await walk('/v1/repositories', 2);
    expect(sizes).toEqual([2, 2, 1]);
    expect(items.map((r) => r.id)).toEqual(await idsInOrder('SELECT id FROM repositories'));
    for (const item of items)
      expect(Object.keys(item).sort()).toEqual([
        'copyFiles',
        'defaultBranch',
        'id',
        'mergeStrategies',
        'name',
        'rebuildable',
        'rebuildableDefault',
        'remote',
        'setup',
        'setupFailure',
      ]);
    expectNoLeak(items);
  });

  it('pages boards without skipping or repeating rows made at the same time, or microseconds apart', async () => {
    for (const name of ['one', 'two']) expect((await h.api('POST', '/v1/boards', { name })).status).toBe(201);
    // One statement: four boards with the same created_at (only the id orders them) ...
    await h.pool.query(
      "INSERT INTO boards (id, name) SELECT gen_random_uuid(), 'same-time-' || i FROM generate_series(1, 4) i",
    );
    // ... and three a microsecond apart, in the future so they come first (a millisecond cursor would skip two).
    await h.pool.query(
      "INSERT INTO boards (id, name, created_at) SELECT gen_random_uuid(), 'micro-' || i, timestamptz '2100-01-01 00:00:00.000001+00' + i * interval '1 microsecond' FROM generate_series(1, 3) i",
    );
    const { items, sizes } = await walk('/v1/boards', 2);
    expect(sizes).toEqual([2, 2, 2, 2, 1]);
    expect(items.map((b) => b.id)).toEqual(await idsInOrder('SELECT id FROM boards'));
    expect(items.slice(0, 3).map((b) => b.name)).toEqual(['micro-3', 'micro-2', 'micro-1']);
    for (const item of items) expect(Object.keys(item).sort()).toEqual(['id', 'name']);
  });
});

describe('GET /v1/tasks', () => {
  it('pages tasks, filtered by board, parent and archived, with the light item', async () => {
    const board = (await h.api('POST', '/v1/boards', { name: 'tasks' })).body.id;
    const parent = await createTask(h, [], { boardId: board });
    const children: string[] = [];
    for (let i = 0; i < 3; i++) children.push(await createTask(h, [], { boardId: board, parentTaskId: parent }));
    const loose = await createTask(h, []);
    await waitForJob(h, (await archive(h, children[0]!)).operationId);

    const all = await walk('/v1/tasks', 2);
    expect(all.items.map((t) => t.id)).toEqual(await idsInOrder('SELECT id FROM tasks'));
    expect(all.items.map((t) => t.id)).toContain(loose);

    const onBoard = await walk(`/v1/tasks?boardId=${board}`, 2);
    expect(onBoard.sizes).toEqual([2, 2]);
    expect(onBoard.items.map((t) => t.id)).toEqual([...children].reverse().concat(parent));
    const ofParent = await walk(`/v1/tasks?parentTaskId=${parent}`, 1);
    expect(ofParent.sizes).toEqual([1, 1, 1]);
    expect(ofParent.items.map((t) => t.id)).toEqual([...children].reverse());
    const archived = await walk(`/v1/tasks?parentTaskId=${parent}&archived=true`, 1);
    expect(archived.items.map((t) => [t.id, t.state])).toEqual([[children[0], 'archived']]);
    const active = await walk(`/v1/tasks?boardId=${board}&archived=false`, 1);
    expect(active.items.map((t) => t.id)).toEqual([children[2], children[1], parent]);
    expect(active.items.every((t) => t.state === 'active')).toBe(true);
    expect((await walk('/v1/tasks?archived=true', 50)).items.map((t) => t.id)).toEqual(
      await idsInOrder('SELECT id FROM tasks WHERE archived_at IS NOT NULL'),
    );

    const item = ofParent.items.find((t) => t.id === children[1]);
    expect(item).toEqual({
      id: children[1],
      title: 'a task',
      state: 'active',
      parentTaskId: parent,
      boardId: board,
      workspaceMode: 'new_workspace',
      groupId: null,
      quickChat: false,
      createdAt: expect.any(String),
      merged: null,
      activity: 'idle',
      attention: null,
    });
    // The same fields as the task's own view.
    expect((await h.api('GET', `/v1/tasks/${children[1]}`)).body).toMatchObject(item);
  });

  it('filters tasks by a repository they work in, paged like the rest (the console board) [console board]', async () => {
    const [a, b] = [await repo(), await repo()];
    const onlyA = await createTask(h, [a.id]);
    const both = await createTask(h, [a.id, b.id]);
    const onlyB = await createTask(h, [b.id]);
    const ofA = await walk(`/v1/tasks?repositoryId=${a.id}`, 1);
    expect(ofA.sizes).toEqual([1, 1]);
    expect(ofA.items.map((t) => t.id)).toEqual([both, onlyA]);
    expect((await walk(`/v1/tasks?repositoryId=${b.id}&archived=false`, 5)).items.map((t) => t.id)).toEqual([
      onlyB,
      both,
    ]);
    expect((await walk(`/v1/tasks?repositoryId=${randomUUID()}`, 5)).items).toEqual([]);
  });
});

describe('GET /v1/tasks/:id/sessions and session links', () => {
  it("pages a task's sessions with their execution and a link to the run that admitted each", async () => {
    const r = await repo();
    const taskId = await createTask(h, [r.id]);
    const launched: any[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await launch(h, taskId, { name: `s${i}` });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      // The launch's answer links to its run: launch/<sessionId>, a run of this session in Temporal.
      const workflowId = workflowIdOfLink(res.body.links);
      expect(workflowId).toBe(`launch/${res.body.sessionId}`);
      const described = await h.temporal.workflow.getHandle(workflowId).describe();
      expect(described.typedSearchAttributes.get(SessionIdAttr)).toBe(res.body.sessionId);
      launched.push(res.body);
    }
    const { items, sizes } = await walk(`/v1/tasks/${taskId}/sessions`, 1);
    expect(sizes).toEqual([1, 1, 1]);
    expect(items.map((s) => s.id)).toEqual(await idsInOrder('SELECT id FROM sessions WHERE task_id = $1', [taskId]));
    expect(items.map((s) => s.id).sort()).toEqual(launched.map((l) => l.sessionId).sort());
    for (const item of items) {
      // The list shows each session as GET /v1/sessions/:id does, its latest execution included.
      expect(item).toEqual((await h.api('GET', `/v1/sessions/${item.id}`)).body);
      expect(item.execution.id).toBe(launched.find((l) => l.sessionId === item.id).executionId);
      expect(workflowIdOfLink(item.links)).toBe(`launch/${item.id}`);
    }
    expectNoLeak(items);

    // A resume: its answer, and the session from then on, link to the resume's run.
    const resumed = await h.api('POST', `/v1/sessions/${launched[0].sessionId}/resume`);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const run = (await h.pool.query('SELECT admitted_run FROM sessions WHERE id = $1', [launched[0].sessionId])).rows[0]
      .admitted_run;
    expect(workflowIdOfLink(resumed.body.links)).toBe(`resume/${launched[0].sessionId}/${run}`);
    const resumeRun = await h.temporal.workflow.getHandle(workflowIdOfLink(resumed.body.links)).describe();
    expect(resumeRun.typedSearchAttributes.get(SessionIdAttr)).toBe(launched[0].sessionId);
    expect((await h.api('GET', `/v1/sessions/${launched[0].sessionId}`)).body.links).toEqual(resumed.body.links);

    expectSafeError((await h.api('GET', `/v1/tasks/${randomUUID()}/sessions`)).body, 'not_found');
    await waitForJob(h, (await archive(h, taskId)).operationId);
  });
});

describe('GET /v1/cleanup-jobs and job links', () => {
  it('pages jobs filtered by state, trigger and task, each linking to its run', async () => {
    const archivedTasks: string[] = [];
    const jobs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const taskId = await createTask(h, []);
      const accepted = (await archive(h, taskId)) as { operationId: string; workflowId: string; links: unknown };
      // The 202 links to the run it started.
      expect(workflowIdOfLink(accepted.links)).toBe(accepted.workflowId);
      await waitForJob(h, accepted.operationId);
      archivedTasks.push(taskId);
      jobs.push(accepted.operationId);
    }
    const resetTask = await createTask(h, []);
    const reset = await h.api('POST', `/v1/tasks/${resetTask}/environment/reset`, undefined, OPERATOR_TOKEN);
    expect(reset.status, JSON.stringify(reset.body)).toBe(202);
    await waitForJob(h, reset.body.operationId);

    const byTrigger = await walk('/v1/cleanup-jobs?trigger=archive', 1);
    expect(byTrigger.items.length).toBeGreaterThanOrEqual(3);
    expect(byTrigger.items.map((j) => j.operationId)).toEqual(
      await idsInOrder("SELECT operation_id AS id, created_at FROM cleanup_jobs WHERE trigger = 'archive'"),
    );
    expect(byTrigger.items.map((j) => j.operationId)).toEqual(expect.arrayContaining(jobs));
    expect(byTrigger.items.map((j) => j.operationId)).not.toContain(reset.body.operationId);

    const all = await walk('/v1/cleanup-jobs', 2);
    expect(all.items.map((j) => j.operationId)).toEqual(
      await idsInOrder('SELECT operation_id AS id, created_at FROM cleanup_jobs'),
    );
    expect(
      (await walk('/v1/cleanup-jobs?trigger=environment_reset&state=succeeded', 50)).items.map((j) => j.operationId),
    ).toEqual([reset.body.operationId]);
    expect((await walk(`/v1/cleanup-jobs?taskId=${archivedTasks[1]}`, 50)).items.map((j) => j.operationId)).toEqual([
      jobs[1],
    ]);
    expect((await walk('/v1/cleanup-jobs?state=needs_operator', 50)).items).toEqual([]);
    expect((await walk('/v1/cleanup-jobs?state=succeeded', 50)).items.map((j) => j.operationId)).toEqual(
      await idsInOrder("SELECT operation_id AS id, created_at FROM cleanup_jobs WHERE state = 'succeeded'"),
    );

    for (const job of all.items) {
      // The item is the job's own view, and its link names the job's run, a run of its task.
      expect(job).toEqual((await h.api('GET', `/v1/cleanup-jobs/${job.operationId}`)).body);
      expect(workflowIdOfLink(job.links)).toBe(job.workflowId);
      const described = await h.temporal.workflow.getHandle(job.workflowId).describe();
      expect(described.typedSearchAttributes.get(TaskIdAttr)).toBe(job.taskId);
    }
  });
});

describe('bad list queries', () => {
  it('a bad limit, cursor, filter or unknown parameter is a 400 invalid_request and changes nothing', async () => {
    const taskId = await createTask(h, []);
    const before = await rowCounts();
    const notOurs = [
      cursorOf({ t: 'yesterday', k: randomUUID() }),
      cursorOf({ t: '2026-01-01 00:00:00.123456+00', k: 'not-a-uuid' }),
      // A saved-work cursor (keyed by its ref) is not one of these lists'.
      cursorOf({ t: '2026-01-01 00:00:00.123456+00', k: `refs/task-workspaces/saved/${taskId}/${randomUUID()}` }),
      cursorOf({ t: '2026-01-01 00:00:00.123456+00' }),
      cursorOf(['2026-01-01 00:00:00+00', randomUUID()]),
      'bm90LWpzb24',
    ];
    const common = [
      'limit=0',
      'limit=201',
      'limit=-1',
      'limit=1.5',
      'limit=ten',
      'limit=',
      'cursor=',
      'cursor=%00',
      'other=1',
      ...notOurs.map((c) => `cursor=${c}`),
    ];
    const cases: Record<string, string[]> = {
      '/v1/tasks': [
        ...common,
        'boardId=not-a-uuid',
        'repositoryId=x',
        'parentTaskId=42',
        'archived=yes',
        'archived=1',
        'state=merging',
      ],
      [`/v1/tasks/${taskId}/sessions`]: [...common, 'state=running'],
      '/v1/repositories': [...common, 'name=x'],
      '/v1/boards': common,
      '/v1/cleanup-jobs': [...common, 'state=done', 'state=SUCCEEDED', 'trigger=archived', 'trigger=', 'taskId=x'],
      [`/v1/repositories/${randomUUID()}/saved-work`]: common.filter((q) => !q.includes(notOurs[2]!)),
    };
    for (const [route, queries] of Object.entries(cases)) {
      for (const query of queries) {
        const res = await h.api('GET', `${route}?${query}`);
        expect(res.status, `${route}?${query}`).toBe(400);
        expectSafeError(res.body, 'invalid_request', [h.scratch]);
      }
    }
    expect((await h.api('GET', '/v1/tasks/not-a-uuid/sessions')).status).toBe(400);
    expect(await rowCounts()).toEqual(before);
    // The edges of `limit` are accepted.
    for (const limit of ['1', '200']) expect((await h.api('GET', `/v1/tasks?limit=${limit}`)).status).toBe(200);
  });
});

describe('TWS_TEMPORAL_UI_URL', () => {
  it('defaults to the UI of the dev server make start runs, and loses a trailing slash', () => {
    const at = (env: Record<string, string>) => loadConfig(env, { cwd: '/x', hostname: 'h' }).temporalUiUrl;
    expect(at({})).toBe('http://127.0.0.1:8233');
    expect(at({ TWS_TEMPORAL_UI_PORT: '9000' })).toBe('http://127.0.0.1:9000');
    expect(at({ TWS_TEMPORAL_UI_URL: 'https://tui.example/' })).toBe('https://tui.example');
  });
  it('an engine named by TEMPORAL_ADDRESS alone has no UI we know of: answers carry no link', () => {
    const at = (env: Record<string, string>) => loadConfig(env, { cwd: '/x', hostname: 'h' });
    expect(at({ TEMPORAL_ADDRESS: 'temporal.example:7233' }).temporalUiUrl).toBeNull();
    expect(at({ TEMPORAL_ADDRESS: 'temporal.example:7233', TWS_TEMPORAL_UI_PORT: '9000' }).temporalUiUrl).toBeNull();
    expect(temporalLinks(at({ TEMPORAL_ADDRESS: 'temporal.example:7233' }), 'cleanup/x')).toEqual({});
    const named = at({ TEMPORAL_ADDRESS: 'temporal.example:7233', TWS_TEMPORAL_UI_URL: 'https://ui.example' });
    expect(temporalLinks(named, 'cleanup/x')).toEqual({
      temporal: 'https://ui.example/namespaces/default/workflows/cleanup%2Fx',
    });
  });
});
