/** Steps through the public HTTP surface that many tests share. */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { Harness } from './harness';
import { USER_TOKEN } from './harness';
import { connect } from 'node:net';
import { branches, fingerprint, makeRepo, worktreePaths } from './world';

export async function registerRepo(h: Harness, repoPath: string, name: string): Promise<string> {
  const res = await h.api('POST', '/v1/repositories', { name, path: repoPath });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

/** Repositories for a test file: `next()` makes a fresh git repository under the harness's scratch folder and registers it. */
export function repositories(h: () => Harness, prefix: string) {
  let n = 0;
  return async function next() {
    const name = `${prefix}-${++n}`;
    const dir = makeRepo(h().scratch, name);
    return { dir, id: await registerRepo(h(), dir, name), name };
  };
}

export async function createTask(
  h: Harness,
  repositories: (string | { repositoryId: string; baseBranch?: string; checkoutBranch?: string })[],
  extra: Record<string, unknown> = {},
): Promise<string> {
  const res = await h.api('POST', '/v1/tasks', {
    title: 'a task',
    repositories: repositories.map((r) => (typeof r === 'string' ? { repositoryId: r } : r)),
    ...extra,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

/** Tasks of one new workspace group: the first member makes the group, the others name it. */
export async function createGroupTasks(
  h: Harness,
  repositories: string[],
  members: number,
): Promise<{ groupId: string; tasks: string[] }> {
  const first = await createTask(h, repositories, { workspace: { mode: 'shared_group' } });
  const groupId: string = (await h.api('GET', `/v1/tasks/${first}`)).body.groupId;
  const tasks = [first];
  while (tasks.length < members)
    tasks.push(await createTask(h, repositories, { workspace: { mode: 'shared_group', groupId } }));
  return { groupId, tasks };
}

export const SLEEPER = ['sleep', '600'];

export function launch(h: Harness, taskId: string, body: Record<string, unknown> = {}) {
  return h.api('POST', `/v1/tasks/${taskId}/sessions`, {
    executorType: 'worktree',
    agentProfile: 'shell',
    command: SLEEPER,
    ...body,
  });
}

/** Every refusal body: the contract's shape and nothing that locates the user's files. */
export function expectSafeError(body: any, code: string, secrets: string[] = []): void {
  expect(body?.error?.code, JSON.stringify(body)?.slice(0, 300)).toBe(code);
  expect(Object.keys(body)).toEqual(['error']);
  expect(typeof body.error.message).toBe('string');
  expect(typeof body.error.recoverable).toBe('boolean');
  expect(typeof body.error.retryAfterMs).toBe('number');
  expect(typeof body.error.action).toBe('string');
  expect(body.error.errorId).toMatch(/^[0-9a-f-]{36}$/);
  const text = JSON.stringify(body);
  expect(text).not.toMatch(/\/tmp\/|\/work\/|\/home\/|refs\/heads|tws\//);
  for (const secret of secrets) expect(text).not.toContain(secret);
}

/** A launch that must be refused: no session row, no execution, no row or file changed. */
export async function expectLaunchRefused(
  h: Harness,
  taskId: string,
  code: string,
  opts: { body?: Record<string, unknown>; watch?: string[]; secrets?: string[]; status?: number } = {},
): Promise<any> {
  const { rowCounts, fingerprint, listDir } = await import('./world');
  const before = {
    rows: await rowCounts(h.pool),
    root: listDir(h.config.workspaceRoot),
    files: (opts.watch ?? []).map((d) => fingerprint(d)),
  };
  const res = await launch(h, taskId, opts.body);
  expect(res.status, JSON.stringify(res.body)).toBe(opts.status ?? 409);
  expectSafeError(res.body, code, [...(opts.watch ?? []), ...(opts.secrets ?? [])]);
  const after = await rowCounts(h.pool);
  expect(after.sessions).toBe(before.rows.sessions);
  expect(after.executions).toBe(before.rows.executions);
  expect(after.environment_repos).toBe(before.rows.environment_repos);
  expect(listDir(h.config.workspaceRoot)).toEqual(before.root);
  expect((opts.watch ?? []).map((d) => fingerprint(d))).toEqual(before.files);
  return res.body;
}

export async function pidOf(h: Harness, sessionId: string): Promise<number> {
  const res = await h.api('GET', `/v1/sessions/${sessionId}`);
  expect(res.status).toBe(200);
  return res.body.execution.pid;
}

/**
 * Polls `check` every 100 ms until it holds; fails naming `what` after the timeout, with what
 * `seen` reads of the world then (rows, processes), so that a timeout says what it saw.
 */
export async function waitUntil(
  check: () => Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
  seen?: () => Promise<unknown>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  const saw = seen
    ? await seen().then(
        (x) => JSON.stringify(x),
        (err: Error) => `(unreadable: ${err.message})`,
      )
    : null;
  throw new Error(`timed out waiting for ${what}${saw ? `; saw ${saw}` : ''}`);
}

/** What an execution's agent printed, once it printed `marker` (read from its log file). */
export async function agentOutputUntil(h: Harness, executionId: string, marker: string): Promise<string> {
  const logPath = (
    await h.pool.query<{ log_path: string }>('SELECT log_path FROM executions WHERE id = $1', [executionId])
  ).rows[0]!.log_path;
  let out = '';
  await waitUntil(async () => (out = readFileSync(logPath, 'utf8')).includes(marker), `the agent to print ${marker}`);
  return out;
}

/** The session a launch of this task admitted and has not yet started (`starting`). */
export async function admittedSession(h: Harness, taskId: string): Promise<string> {
  let sessionId: string | undefined;
  await waitUntil(async () => {
    sessionId = (await h.pool.query("SELECT id FROM sessions WHERE task_id = $1 AND state = 'starting'", [taskId]))
      .rows[0]?.id;
    return sessionId !== undefined;
  }, 'the admission');
  return sessionId!;
}

/** A repository, a task on it, and one session launched with `body`; 201 expected. */
export async function taskWithSession(h: Harness, name: string, body: Record<string, unknown> = {}) {
  const repo = makeRepo(h.scratch, name);
  const taskId = await createTask(h, [await registerRepo(h, repo, name)]);
  const res = await launch(h, taskId, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { repo, taskId, session: res.body as { sessionId: string; executionId: string; taskEnvironmentId: string } };
}

/** The session once its agent no longer runs (exited, stopped or vanished). */
export async function agentEnded(h: Harness, sessionId: string): Promise<any> {
  let body: any;
  await waitUntil(
    async () => {
      body = (await h.api('GET', `/v1/sessions/${sessionId}`)).body;
      return body.execution?.state !== 'running';
    },
    `the end of session ${sessionId}'s agent`,
    30_000,
  );
  return body;
}

/** A request with the headers a retrying client sends (an Idempotency-Key), to any gateway of the harness. */
export async function send(
  baseUrl: string,
  method: string,
  route: string,
  body?: unknown,
  opts: { key?: string; token?: string } = {},
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${opts.token ?? USER_TOKEN}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (opts.key) headers['idempotency-key'] = opts.key;
  const res = await fetch(baseUrl + route, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** The workflow id of the resume that last admitted this session. */
export async function lastResumeRun(h: Harness, sessionId: string): Promise<string> {
  const run = (
    await h.pool.query<{ admitted_run: string | null }>('SELECT admitted_run FROM sessions WHERE id = $1', [sessionId])
  ).rows[0]?.admitted_run;
  expect(run, 'an admitted resume').toBeTruthy();
  return `resume/${sessionId}/${run}`;
}

/**
 * What a refused request must leave as it was: the row count of every table, every metric
 * counter, every file under the workspace root, and the branches and worktree registrations
 * of the given repositories.
 */
export async function worldState(h: Harness, repositories: string[]) {
  const tables = (
    await h.pool.query<{ name: string }>(
      "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1",
    )
  ).rows;
  const rows: Record<string, number> = {};
  // `events` is the change log that GET /v1/events follows: background updates (an agent's
  // execution, a job's next attempt) append to it; what changed is seen in the tables themselves.
  // `task_usage` is the limit check's own measurement of a task's agents, written on its timer
  // (every 30 s) whatever a request does.
  const background = new Set(['events', 'task_usage']);
  for (const { name } of tables.filter((t) => !background.has(t.name)))
    rows[name] = Number((await h.pool.query(`SELECT count(*) AS n FROM "${name}"`)).rows[0].n);
  const counters = (await h.pool.query('SELECT name, labels, value FROM metric_counters ORDER BY name, labels')).rows;
  return {
    rows,
    counters,
    workspaceRoot: fingerprint(h.config.workspaceRoot),
    repositories: repositories.map((repo) => ({ repo, branches: branches(repo), worktrees: worktreePaths(repo) })),
  };
}

/** A request written byte for byte (what fetch will not send: a bad method, a raw `..`, a NUL in a header); the answer's status and body. */
export function rawRequest(baseUrl: string, head: string): Promise<{ status: number; body: any }> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(head));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      const raw = text.slice(text.indexOf('\r\n\r\n') + 4);
      let body: any = raw;
      try {
        body = JSON.parse(raw);
      } catch {
        // chunked or not JSON: the caller's assertions say so
      }
      resolve({ status, body });
    });
  });
}

/**
 * A shared group of two on a repository of its own (`<prefix>-<random>`): G1 launches and makes
 * the group's workspace, G2 launches and attaches to it. Both agents run.
 */
export async function groupSharingOne(h: Harness, prefix: string) {
  const name = `${prefix}-${randomUUID().slice(0, 8)}`;
  const repo = makeRepo(h.scratch, name);
  const repositoryId = await registerRepo(h, repo, name);
  const { tasks } = await createGroupTasks(h, [repositoryId], 2);
  const [g1, g2] = tasks as [string, string];
  const first = await launch(h, g1);
  expect(first.status, JSON.stringify(first.body)).toBe(201);
  const second = await launch(h, g2);
  expect(second.body).toMatchObject({ role: 'attached', taskEnvironmentId: first.body.taskEnvironmentId });
  return { name, repo, repositoryId, g1, g2, first, second };
}
