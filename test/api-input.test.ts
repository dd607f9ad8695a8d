/** Bad input gets a clear 4xx in the contract's error body and changes nothing [R7]. */
import { agentIsolation, agentNetwork } from '../executors/host/agent-sandbox';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { createTask, expectSafeError, launch, registerRepo } from './support/scenario';
import { branches, fingerprint, git, listDir, makeRepo, rowCounts, worktreePaths } from './support/world';

let h: Harness;
let repo: string;
let repoId: string;
let taskId: string;

beforeAll(async () => {
  h = await createHarness();
  repo = makeRepo(h.scratch, 'input-repo', { branches: ['feature'] });
  repoId = await registerRepo(h, repo, 'input-repo');
  taskId = await createTask(h, [repoId]);
});
afterAll(async () => h?.close());

/** Runs a request that must be refused and proves that no row, folder, branch or worktree changed. */
async function expectRefusedWithoutChange(
  method: string,
  url: string,
  body: unknown,
  status: number,
  code: string,
  token: string | null = USER_TOKEN,
) {
  const before = {
    rows: await rowCounts(h.pool),
    root: listDir(h.config.workspaceRoot),
    repo: fingerprint(repo),
    branches: branches(repo),
    worktrees: worktreePaths(repo),
  };
  const res = await h.api(method, url, body, token);
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expectSafeError(res.body, code, [USER_TOKEN, OPERATOR_TOKEN, repo]);
  expect(await rowCounts(h.pool)).toEqual(before.rows);
  expect(listDir(h.config.workspaceRoot)).toEqual(before.root);
  expect(fingerprint(repo)).toBe(before.repo);
  expect(branches(repo)).toEqual(before.branches);
  expect(worktreePaths(repo)).toEqual(before.worktrees);
  return res.body;
}

describe('repositories', () => {
  it('a repository registered twice is 409 repository_taken, naming whether its name or its path clashes', async () => {
    const dir = makeRepo(h.scratch, 'twice');
    expect((await h.api('POST', '/v1/repositories', { name: 'twice', path: dir })).status).toBe(201);
    const other = makeRepo(h.scratch, 'twice-other');
    const byName = await expectRefusedWithoutChange(
      'POST',
      '/v1/repositories',
      { name: 'twice', path: other },
      409,
      'repository_taken',
    );
    expect(byName.error).toMatchObject({ clash: 'name' });
    const byPath = await expectRefusedWithoutChange(
      'POST',
      '/v1/repositories',
      { name: 'twice-again', path: dir },
      409,
      'repository_taken',
    );
    expect(byPath.error).toMatchObject({ clash: 'path' });
  });
  it('refuses a path that does not exist', async () => {
    await expectRefusedWithoutChange(
      'POST',
      '/v1/repositories',
      { name: 'nope', path: path.join(h.scratch, 'missing') },
      400,
      'invalid_request',
    );
  });
  it('refuses a repository with no commits, saying so', async () => {
    const empty = path.join(h.scratch, 'empty-repo');
    mkdirSync(empty);
    git(empty, 'init', '-q', '-b', 'main');
    const body = await expectRefusedWithoutChange(
      'POST',
      '/v1/repositories',
      { name: 'empty', path: empty },
      400,
      'invalid_request',
    );
    expect(body.error.message).toBe('The repository has no commits yet; commit once, then register it.');
  });
  it('refuses a folder that is not a git repository', async () => {
    const plain = path.join(h.scratch, 'plain');
    mkdirSync(plain, { recursive: true });
    writeFileSync(path.join(plain, 'file.txt'), 'x');
    await expectRefusedWithoutChange(
      'POST',
      '/v1/repositories',
      { name: 'plain', path: plain },
      400,
      'invalid_request',
    );
  });
  it('refuses a relative path, a sub-folder of a repository and a bad name', async () => {
    mkdirSync(path.join(repo, 'sub'), { recursive: true });
    await expectRefusedWithoutChange(
      'POST',
      '/v1/repositories',
      { name: 'rel', path: 'relative/path' },
      400,
      'invalid_request',
    );
    await expectRefusedWithoutChange(
      'POST',
      '/v1/repositories',
      { name: 'sub', path: path.join(repo, 'sub') },
      400,
      'invalid_request',
    );
    await expectRefusedWithoutChange(
      'POST',
      '/v1/repositories',
      { name: '../escape', path: repo },
      400,
      'invalid_request',
    );
    await expectRefusedWithoutChange('POST', '/v1/repositories', { name: 'dup', path: repo }, 409, 'repository_taken');
  });
  it('refuses a default branch that does not exist or that git would reject', async () => {
    const other = makeRepo(h.scratch, 'other-repo');
    await expectRefusedWithoutChange(
      'POST',
      '/v1/repositories',
      { name: 'other', path: other, defaultBranch: 'nope' },
      400,
      'invalid_request',
    );
    await expectRefusedWithoutChange(
      'POST',
      '/v1/repositories',
      { name: 'other', path: other, defaultBranch: '-main' },
      400,
      'invalid_request',
    );
  });
});

describe('tasks', () => {
  it('refuses branch names git would reject or that start with "-"', async () => {
    for (const bad of ['-evil', 'a..b', 'has space', 'end.lock', 'x~1', 'a:b', 'trailing/', '.hidden', 'at@{1}']) {
      await expectRefusedWithoutChange(
        'POST',
        '/v1/tasks',
        { title: 't', repositories: [{ repositoryId: repoId, baseBranch: bad }] },
        400,
        'invalid_request',
      );
      await expectRefusedWithoutChange(
        'POST',
        '/v1/tasks',
        { title: 't', repositories: [{ repositoryId: repoId, checkoutBranch: bad }] },
        400,
        'invalid_request',
      );
    }
  });
  it('refuses a base or checkout branch the repository does not have', async () => {
    await expectRefusedWithoutChange(
      'POST',
      '/v1/tasks',
      { title: 't', repositories: [{ repositoryId: repoId, baseBranch: 'missing' }] },
      400,
      'invalid_request',
    );
    await expectRefusedWithoutChange(
      'POST',
      '/v1/tasks',
      { title: 't', repositories: [{ repositoryId: repoId, checkoutBranch: 'missing' }] },
      400,
      'invalid_request',
    );
  });
  it('answers 404 for unknown repository, board, parent and task ids', async () => {
    await expectRefusedWithoutChange(
      'POST',
      '/v1/tasks',
      { title: 't', repositories: [{ repositoryId: randomUUID() }] },
      404,
      'not_found',
    );
    await expectRefusedWithoutChange(
      'POST',
      '/v1/tasks',
      { title: 't', repositories: [], boardId: randomUUID() },
      404,
      'not_found',
    );
    await expectRefusedWithoutChange(
      'POST',
      '/v1/tasks',
      { title: 't', repositories: [], parentTaskId: randomUUID() },
      404,
      'not_found',
    );
    await expectRefusedWithoutChange('GET', `/v1/tasks/${randomUUID()}`, undefined, 404, 'not_found');
    await expectRefusedWithoutChange('GET', `/v1/sessions/${randomUUID()}`, undefined, 404, 'not_found');
    await expectRefusedWithoutChange('GET', `/v1/sessions/${randomUUID()}/workspace`, undefined, 404, 'not_found');
  });
  it('refuses malformed bodies and ids', async () => {
    await expectRefusedWithoutChange('POST', '/v1/tasks', { repositories: [] }, 400, 'invalid_request');
    await expectRefusedWithoutChange(
      'POST',
      '/v1/tasks',
      { title: 't', repositories: [{ repositoryId: repoId }, { repositoryId: repoId }] },
      400,
      'invalid_request',
    );
    await expectRefusedWithoutChange(
      'POST',
      '/v1/tasks',
      { title: 't', repositories: [], workspace: { mode: 'inherit_parent' } },
      400,
      'invalid_request',
    );
    await expectRefusedWithoutChange('GET', '/v1/tasks/not-a-uuid', undefined, 400, 'invalid_request');
    const raw = await fetch(`${h.baseUrl}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${USER_TOKEN}`, 'content-type': 'application/json' },
      body: '{"title": ',
    });
    expect(raw.status).toBe(400);
    expectSafeError(await raw.json(), 'invalid_request');
    // No body at all is an empty object: refused by a route with required fields.
    const empty = await fetch(`${h.baseUrl}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${USER_TOKEN}`, 'content-type': 'application/json' },
    });
    expect(empty.status).toBe(400);
    expectSafeError(await empty.json(), 'invalid_request');
  });

  it('takes a POST without a body, with or without a JSON content type, as an empty object (archive)', async () => {
    for (const headers of [{ 'content-type': 'application/json' }, {}] as Record<string, string>[]) {
      const taskId = await createTask(h, [repoId]);
      const res = await fetch(`${h.baseUrl}/v1/tasks/${taskId}/archive`, {
        method: 'POST',
        headers: { authorization: `Bearer ${USER_TOKEN}`, ...headers },
      });
      expect(res.status, await res.clone().text()).toBe(202);
      const job = (
        await h.pool.query('SELECT task_id, trigger FROM cleanup_jobs WHERE operation_id = $1', [
          ((await res.json()) as { operationId: string }).operationId,
        ])
      ).rows;
      expect(job).toEqual([{ task_id: taskId, trigger: 'archive' }]);
    }
  });
});

describe('launches', () => {
  it('refuses an unknown executor type, an unknown profile and a shell profile without a command', async () => {
    await expectRefusedWithoutChange(
      'POST',
      `/v1/tasks/${taskId}/sessions`,
      { executorType: 'teleport', agentProfile: 'shell', command: ['true'] },
      400,
      'invalid_request',
    );
    await expectRefusedWithoutChange(
      'POST',
      `/v1/tasks/${taskId}/sessions`,
      { executorType: 'worktree', agentProfile: 'nobody', command: ['true'] },
      400,
      'invalid_request',
    );
    await expectRefusedWithoutChange(
      'POST',
      `/v1/tasks/${taskId}/sessions`,
      { executorType: 'worktree', agentProfile: 'shell' },
      400,
      'invalid_request',
    );
  });
  it('answers 404 for a launch on an unknown task', async () => {
    await expectRefusedWithoutChange(
      'POST',
      `/v1/tasks/${randomUUID()}/sessions`,
      { executorType: 'worktree', agentProfile: 'shell', command: ['true'] },
      404,
      'not_found',
    );
  });
});

describe('messages a person can act on', () => {
  const raw = (method: string, route: string, body: string) =>
    fetch(`${h.baseUrl}${route}`, {
      method,
      headers: { authorization: `Bearer ${USER_TOKEN}`, 'content-type': 'application/json' },
      body,
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as any }));

  it('a 400 names the field and what it accepts, once; an unknown field gets the nearest known one', async () => {
    const before = await rowCounts(h.pool);
    const bad = await launch(h, taskId, { executorType: 'bogus' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toBe(
      'executorType must be one of worktree, local, ssh, container: the executors this service runs (no other is available here).',
    );
    // An executor the contract names but this service does not run: the same 400, nothing created.
    const unavailable = await launch(h, taskId, { executorType: 'sandbox' });
    expect(unavailable.status).toBe(400);
    expect(unavailable.body.error).toMatchObject({
      code: 'invalid_request',
      message:
        'executorType must be one of worktree, local, ssh, container: the executors this service runs (no other is available here).',
    });
    // `container` where the operator configured no engine: a 400 of its own, not to be retried.
    const notOffered = await launch(h, taskId, { executorType: 'container' });
    expect(notOffered.status).toBe(400);
    expect(notOffered.body.error).toMatchObject({ code: 'executor_unavailable', recoverable: false, offered: false });
    const repos = await h.api('POST', '/v1/tasks', { title: 't', repos: [] });
    expect(repos.status).toBe(400);
    expect(repos.body.error.message).toBe('repos is not a field of this request; did you mean repositories?');
    const missing = await h.api('POST', '/v1/boards', {});
    expect(missing.body.error.message).toBe('name is required.');
    // A required field misspelled: the field the request gave is named with the one it likely meant.
    const misspelled = await h.api('POST', '/v1/tasks', { tittle: 't', repositories: [] });
    expect(misspelled.status).toBe(400);
    expect(misspelled.body.error.message).toBe('title is required; did you mean title where the request says tittle?');
    const lower = await h.api('POST', `/v1/tasks/${taskId}/sessions`, {
      executortype: 'worktree',
      agentProfile: 'shell',
      command: ['true'],
    });
    expect(lower.status).toBe(400);
    expect(lower.body.error.message).toBe(
      'executorType is required; did you mean executorType where the request says executortype?',
    );
    const profile = await launch(h, taskId, { agentProfile: 'no-such-agent' });
    expect(profile.status).toBe(400);
    expect(profile.body.error.message).toMatch(
      /^agentProfile is not a profile of this service; the profiles are: shell/,
    );
    expect(await rowCounts(h.pool)).toEqual(before);
  });

  it('a body that is not JSON says where it broke', async () => {
    const broken = await raw('POST', '/v1/boards', '{"name": }');
    expect(broken.status).toBe(400);
    // Node names the place (a position) or the token; either way the caller learns where.
    expect(broken.body.error.message).toMatch(
      /^The body is not valid JSON: (it breaks at character 10|a '\}' where a value or a name belongs)\.$/,
    );
    const cut = await raw('POST', '/v1/boards', '{"name": "b"');
    expect(cut.body.error.message).toMatch(
      /^The body is not valid JSON: (it ends too early|it breaks at character \d+)\.$/,
    );
  });
});

describe('methods', () => {
  it('a path that exists, asked with a method it does not answer, is 405 with Allow; nothing changed', async () => {
    const before = await rowCounts(h.pool);
    const ask = (method: string, route: string) =>
      fetch(`${h.baseUrl}${route}`, {
        method,
        headers: { authorization: `Bearer ${USER_TOKEN}`, 'content-type': 'application/json' },
        body: method === 'GET' || method === 'HEAD' ? undefined : '{}',
      });
    const put = await ask('PUT', `/v1/tasks/${taskId}`);
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('DELETE, GET, HEAD, PATCH');
    expectSafeError(await put.json(), 'method_not_allowed');
    const stop = await ask('GET', `/v1/sessions/${randomUUID()}/stop?x=1`);
    expect(stop.status).toBe(405);
    expect(stop.headers.get('allow')).toBe('POST');
    // A path no route has stays 404, with no Allow.
    const unknown = await ask('GET', '/v1/nothing-here');
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('allow')).toBeNull();
    expect(await rowCounts(h.pool)).toEqual(before);
  });
});

describe('authentication', () => {
  it('answers 401 for a missing or wrong token on every /v1 route', async () => {
    await expectRefusedWithoutChange('POST', '/v1/boards', { name: 'b' }, 401, 'unauthorized', null);
    await expectRefusedWithoutChange('POST', '/v1/boards', { name: 'b' }, 401, 'unauthorized', 'wrong-token');
    await expectRefusedWithoutChange(
      'POST',
      `/v1/tasks/${taskId}/sessions`,
      { executorType: 'worktree', agentProfile: 'shell', command: ['true'] },
      401,
      'unauthorized',
      null,
    );
    await expectRefusedWithoutChange('GET', `/v1/tasks/${taskId}`, undefined, 401, 'unauthorized', `${USER_TOKEN}x`);
    // Each says where the tokens are; a user token on an operator route is told which it needs.
    const none = await h.api('GET', `/v1/tasks/${taskId}`, undefined, null);
    expect(none.body.error.message).toMatch(/\.data\/secrets\.json.*TWS_USER_TOKEN and TWS_OPERATOR_TOKEN/);
    const user = await h.api('GET', '/v1/hosts');
    expect(user.status).toBe(403);
    expect(user.body.error.message).toMatch(
      /operator role: .*operatorToken in \.data\/secrets\.json, or TWS_OPERATOR_TOKEN/,
    );
  });
  it('accepts both roles on user routes and leaves health and the OpenAPI document open', async () => {
    expect((await h.api('POST', '/v1/boards', { name: 'by operator' }, OPERATOR_TOKEN)).status).toBe(201);
    expect((await h.api('GET', '/healthz', undefined, null)).body).toEqual({ status: 'ok' });
    expect((await h.api('GET', '/readyz', undefined, null)).body).toEqual({
      status: 'ready',
      agentIsolation: await agentIsolation(h.config.agentSandbox),
      agentNetwork: (await agentNetwork(h.config.agentSandbox, h.config.agentNetwork)).policy,
    });
    const openapi = await h.api('GET', '/openapi.json', undefined, null);
    expect(openapi.status).toBe(200);
    expect(Object.keys(openapi.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/repositories',
        '/v1/boards',
        '/v1/tasks',
        '/v1/tasks/{id}',
        '/v1/tasks/{id}/sessions',
        '/v1/sessions/{id}',
        '/v1/sessions/{id}/workspace',
      ]),
    );
  });
});

it('a refused launch of a real task leaves no session and no folder (repository removed under the task)', async () => {
  // The launch is admitted but materialization fails: nothing may remain on disk.
  const gone = makeRepo(h.scratch, 'gone-repo');
  const goneId = await registerRepo(h, gone, 'gone-repo');
  const goneTask = await createTask(h, [goneId]);
  const { rmSync } = await import('node:fs');
  rmSync(gone, { recursive: true, force: true });
  const before = listDir(h.config.workspaceRoot);
  const res = await launch(h, goneTask);
  expect(res.status).toBe(409);
  expectSafeError(res.body, 'workspace_materialization_failed', [gone]);
  expect(listDir(h.config.workspaceRoot)).toEqual(before);
});
