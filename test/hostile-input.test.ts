/**
 * Every bad input is a typed 4xx with the contract's body, names nothing of the user's files or
 * secrets, and changes nothing. One table of hostile requests against every
 * route, taken against a world with a running agent, then one check that the world (every table's
 * rows, every counter, the workspace root, the repository's branches and worktrees) is as it was.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGateway } from '../client/gateway/app';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import {
  createGroupTasks,
  createTask,
  expectSafeError,
  launch,
  pidOf,
  rawRequest,
  registerRepo,
  SLEEPER,
  waitUntil,
  worldState,
} from './support/scenario';
import { makeRepo } from './support/world';

const SECRET_BRANCH = 'feature/hostile-secret-branch';
const UNKNOWN = '7d0c9b8e-3f5a-4e2b-9c1d-0a1b2c3d4e5f';
const MALFORMED = [
  'not-a-uuid',
  '7d0c9b8e-3f5a-4e2b-9c1d-0a1b2c3d4e5',
  "'%20OR%20'1'='1",
  '..%2F..%2Fetc%2Fpasswd',
  '%00',
];
const BIG = 'x'.repeat(1_500_000);

let h: Harness;
/** The world the table runs against: a repository, a board, a task with a running agent, an idle task, a group. */
const w = { repo: '', repoId: '', board: '', task: '', session: '', execution: '', idle: '', group: '', worktree: '' };
let before: Awaited<ReturnType<typeof worldState>>;

beforeAll(async () => {
  h = await createHarness();
  w.repo = makeRepo(h.scratch, 'hostile-repo', { branches: [SECRET_BRANCH] });
  w.repoId = await registerRepo(h, w.repo, 'hostile-repo');
  w.board = (await h.api('POST', '/v1/boards', { name: 'hostile board' })).body.id;
  w.task = await createTask(h, [w.repoId]);
  const started = await launch(h, w.task);
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  w.session = started.body.sessionId;
  w.execution = started.body.executionId;
  await pidOf(h, w.session);
  w.worktree = (await h.api('GET', `/v1/sessions/${w.session}/workspace`)).body.repositories[0].worktreePath;
  w.idle = await createTask(h, [w.repoId], { boardId: w.board });
  w.group = (await createGroupTasks(h, [w.repoId], 1)).groupId;
  // The worker measures a new workspace within seconds (its own row): measured before the world is
  // read, so that the table's row counts compare requests, not that measurement landing meanwhile.
  await waitUntil(
    async () =>
      (
        await h.pool.query(
          'SELECT 1 FROM environment_disk d JOIN sessions s ON s.environment_id = d.environment_id WHERE s.id = $1',
          [w.session],
        )
      ).rowCount === 1,
    'the new workspace measured',
  );
  before = await worldState(h, [w.repo]);
}, 120_000);
afterAll(async () => h?.close());

/** `{task}`, `{session}`, … in a URL or body: ids and paths of the world, known once it is built. */
const fill = (text: string) =>
  text.replace(/\{(\w+)\}/g, (_, key: keyof typeof w | 'root') => (key === 'root' ? h.config.workspaceRoot : w[key]));

interface Hostile {
  name: string;
  method?: string;
  url?: string;
  /** An object is sent as JSON; a string as it is (with the JSON content type unless `contentType` says otherwise). */
  body?: unknown;
  /** null: no Content-Type header at all. */
  contentType?: string | null;
  headers?: Record<string, string>;
  /** The bearer token; null: no Authorization header. Defaults to the user's. */
  token?: string | null;
  /** The request written byte for byte instead (what fetch will not send). */
  raw?: string;
  status: number;
  code: string;
  /** What this row sends that must not come back (a branch name, a token). */
  secrets?: string[];
}

const json = (
  name: string,
  method: string,
  url: string,
  body: unknown,
  status: number,
  code: string,
  extra: Partial<Hostile> = {},
): Hostile => ({ name, method, url, body, status, code, ...extra });
const op = { token: OPERATOR_TOKEN };

/** Routes with an id, each with a body that would be valid, and the role it needs. */
const ID_ROUTES: { method: string; url: (id: string) => string; body?: unknown; token?: string }[] = [
  { method: 'GET', url: (id) => `/v1/tasks/${id}` },
  { method: 'GET', url: (id) => `/v1/tasks/${id}/git-status` },
  {
    method: 'POST',
    url: (id) => `/v1/tasks/${id}/sessions`,
    body: { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER },
  },
  { method: 'POST', url: (id) => `/v1/tasks/${id}/archive`, body: {} },
  { method: 'POST', url: (id) => `/v1/tasks/${id}/unarchive` },
  { method: 'DELETE', url: (id) => `/v1/tasks/${id}`, token: OPERATOR_TOKEN },
  { method: 'POST', url: (id) => `/v1/tasks/${id}/environment/reset`, token: OPERATOR_TOKEN },
  { method: 'GET', url: (id) => `/v1/sessions/${id}` },
  { method: 'GET', url: (id) => `/v1/sessions/${id}/workspace` },
  { method: 'GET', url: (id) => `/v1/sessions/${id}/logs` },
  { method: 'POST', url: (id) => `/v1/sessions/${id}/resume` },
  { method: 'POST', url: (id) => `/v1/sessions/${id}/stop` },
  { method: 'DELETE', url: (id) => `/v1/sessions/${id}` },
  { method: 'DELETE', url: (id) => `/v1/boards/${id}`, token: OPERATOR_TOKEN },
  { method: 'GET', url: (id) => `/v1/cleanup-jobs/${id}` },
  { method: 'POST', url: (id) => `/v1/cleanup-jobs/${id}/retry`, token: OPERATOR_TOKEN },
  { method: 'POST', url: (id) => `/v1/cleanup-jobs/${id}/cancel`, token: OPERATOR_TOKEN },
  { method: 'GET', url: (id) => `/v1/repositories/${id}/saved-work` },
];

const ROWS: Hostile[] = [
  // Unknown ids, well-formed and malformed, on every route with an id.
  ...ID_ROUTES.map((r) => ({
    name: `unknown id: ${r.method} ${r.url(':id')}`,
    method: r.method,
    url: r.url(UNKNOWN),
    body: r.body,
    token: r.token,
    status: 404,
    code: 'not_found',
  })),
  ...ID_ROUTES.flatMap((r, i) => [
    {
      name: `malformed id: ${r.method} ${r.url(':id')}`,
      method: r.method,
      url: r.url(MALFORMED[i % MALFORMED.length]!),
      body: r.body,
      token: r.token,
      status: 400,
      code: 'invalid_request',
    },
  ]),
  {
    name: 'id longer than the router takes',
    method: 'GET',
    url: `/v1/tasks/${'a'.repeat(300)}`,
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'id with a malformed percent escape',
    method: 'GET',
    url: '/v1/tasks/%E0%A4%A',
    status: 400,
    code: 'invalid_request',
  },
  { name: 'id with a NUL', method: 'GET', url: '/v1/sessions/{session}%00', status: 400, code: 'invalid_request' },
  {
    name: 'uppercase path segment is another route',
    method: 'GET',
    url: '/V1/TASKS/{task}',
    status: 404,
    code: 'not_found',
  },

  // Authentication: missing, wrong, another scheme, in the query (never accepted), the wrong role.
  ...ID_ROUTES.filter((_, i) => i % 3 === 0).map((r) => ({
    name: `no token: ${r.method} ${r.url(':id')}`,
    method: r.method,
    url: r.url('{task}'),
    body: r.body,
    token: null,
    status: 401,
    code: 'unauthorized',
  })),
  json('no token: POST /v1/tasks', 'POST', '/v1/tasks', { title: 't', repositories: [] }, 401, 'unauthorized', {
    token: null,
  }),
  json(
    'wrong token: POST /v1/repositories',
    'POST',
    '/v1/repositories',
    { name: 'r', path: '{repo}' },
    401,
    'unauthorized',
    { token: 'not-the-token' },
  ),
  {
    name: 'Basic scheme with the right secret',
    method: 'GET',
    url: '/v1/tasks/{task}',
    token: null,
    headers: { authorization: `Basic ${USER_TOKEN}` },
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'bearer with trailing words',
    method: 'GET',
    url: '/v1/tasks/{task}',
    token: null,
    headers: { authorization: `Bearer ${USER_TOKEN} extra` },
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'a valid token in the query is not a token',
    method: 'GET',
    url: `/v1/tasks/{task}?token=${USER_TOKEN}`,
    token: null,
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'a valid token as access_token is not a token',
    method: 'GET',
    url: `/v1/cleanup-jobs?access_token=${OPERATOR_TOKEN}`,
    token: null,
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'user deletes a task',
    method: 'DELETE',
    url: '/v1/tasks/{task}?cascade=true&discardChanges=true',
    status: 403,
    code: 'forbidden',
  },
  json('user resets an environment', 'POST', '/v1/tasks/{task}/environment/reset', { abandon: true }, 403, 'forbidden'),
  { name: 'user deletes a board', method: 'DELETE', url: '/v1/boards/{board}', status: 403, code: 'forbidden' },
  json('user sweeps orphans', 'POST', '/v1/orphan-sweep', { dryRun: false }, 403, 'forbidden'),
  {
    name: 'user retries a cleanup job',
    method: 'POST',
    url: `/v1/cleanup-jobs/${UNKNOWN}/retry`,
    status: 403,
    code: 'forbidden',
  },

  // Wrong methods (405 with Allow) and routes that do not exist.
  json('PUT on a collection', 'PUT', '/v1/tasks', { title: 't', repositories: [] }, 405, 'method_not_allowed'),
  json('PUT on a task', 'PUT', '/v1/tasks/{task}', { title: 't' }, 405, 'method_not_allowed'),
  {
    name: 'DELETE on repositories',
    method: 'DELETE',
    url: '/v1/repositories',
    status: 405,
    code: 'method_not_allowed',
  },
  {
    name: 'GET on the orphan sweep',
    method: 'GET',
    url: '/v1/orphan-sweep',
    token: OPERATOR_TOKEN,
    status: 405,
    code: 'method_not_allowed',
  },
  // GET /v1/sessions lists sessions: a POST there is a wrong method, not a missing route.
  { name: 'POST on /v1/sessions', method: 'POST', url: '/v1/sessions', status: 405, code: 'method_not_allowed' },
  {
    name: 'a method HTTP does not know',
    raw: 'FROB /v1/tasks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'a raw ../ in the path',
    raw: `GET /v1/../../etc/passwd HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${USER_TOKEN}\r\nConnection: close\r\n\r\n`,
    status: 404,
    code: 'not_found',
  },
  {
    name: 'a NUL in a header',
    raw: `GET /v1/tasks/{task} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${USER_TOKEN}\u0000\r\nConnection: close\r\n\r\n`,
    status: 400,
    code: 'invalid_request',
  },

  // Sizes: body, URL, headers.
  json('a 1.5 MB task', 'POST', '/v1/tasks', { title: BIG, repositories: [] }, 413, 'payload_too_large'),
  json(
    'a 1.5 MB launch',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: [BIG] },
    413,
    'payload_too_large',
  ),
  json('a 1.5 MB repository', 'POST', '/v1/repositories', { name: 'big', path: BIG }, 413, 'payload_too_large'),
  {
    name: 'a 10 KB URL',
    method: 'GET',
    url: `/v1/tasks/{task}?pad=${'a'.repeat(10_000)}`,
    status: 414,
    code: 'uri_too_long',
  },
  {
    name: 'a 20 KB URL',
    method: 'GET',
    url: `/v1/tasks/{task}?pad=${'a'.repeat(20_000)}`,
    status: 414,
    code: 'uri_too_long',
  },
  { name: 'a 20 KB path', method: 'GET', url: `/v1/tasks/${'a'.repeat(20_000)}`, status: 414, code: 'uri_too_long' },
  {
    name: 'a 20 KB header',
    method: 'GET',
    url: '/v1/tasks/{task}',
    headers: { 'x-padding': 'a'.repeat(20_000) },
    status: 431,
    code: 'headers_too_large',
  },

  // Content types.
  json('text/plain task', 'POST', '/v1/tasks', '{"title":"t","repositories":[]}', 415, 'unsupported_media_type', {
    contentType: 'text/plain',
  }),
  json(
    'no content type on a task',
    'POST',
    '/v1/tasks',
    '{"title":"t","repositories":[]}',
    415,
    'unsupported_media_type',
    { contentType: null },
  ),
  json('form-encoded board', 'POST', '/v1/boards', 'name=b', 415, 'unsupported_media_type', {
    contentType: 'application/x-www-form-urlencoded',
  }),
  json('multipart repository', 'POST', '/v1/repositories', '--x\r\n\r\n--x--', 415, 'unsupported_media_type', {
    contentType: 'multipart/form-data; boundary=x',
  }),
  json(
    'text/plain launch',
    'POST',
    '/v1/tasks/{task}/sessions',
    '{"executorType":"worktree","agentProfile":"shell","command":["true"]}',
    415,
    'unsupported_media_type',
    { contentType: 'text/plain' },
  ),
  json(
    'no content type on an orphan sweep',
    'POST',
    '/v1/orphan-sweep',
    '{"dryRun":false}',
    415,
    'unsupported_media_type',
    { contentType: null, ...op },
  ),
  json(
    'text/plain environment reset',
    'POST',
    '/v1/tasks/{task}/environment/reset',
    '{"abandon":true}',
    415,
    'unsupported_media_type',
    { contentType: 'text/plain', ...op },
  ),
  json('application/jsonx archive', 'POST', '/v1/tasks/{task}/archive', '{}', 415, 'unsupported_media_type', {
    contentType: 'application/jsonx',
  }),
  json('malformed JSON', 'POST', '/v1/tasks', '{"title":', 400, 'invalid_request'),
  json('JSON null', 'POST', '/v1/boards', 'null', 400, 'invalid_request'),
  json('JSON array body', 'POST', '/v1/repositories', [{ name: 'r', path: '{repo}' }], 400, 'invalid_request'),
  json('prototype poisoning', 'POST', '/v1/boards', '{"name":"b","__proto__":{"admin":true}}', 400, 'invalid_request'),
  json(
    'deeply nested JSON',
    'POST',
    '/v1/tasks',
    `{"title":"t","repositories":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
    400,
    'invalid_request',
  ),

  // Repositories: every field.
  json('repository name: a number', 'POST', '/v1/repositories', { name: 42, path: '{repo}' }, 400, 'invalid_request'),
  json(
    'repository name: NUL',
    'POST',
    '/v1/repositories',
    { name: 'a\u0000b', path: '{repo}' },
    400,
    'invalid_request',
  ),
  json(
    'repository name: traversal',
    'POST',
    '/v1/repositories',
    { name: '../escape', path: '{repo}' },
    400,
    'invalid_request',
  ),
  json(
    'repository name: emoji',
    'POST',
    '/v1/repositories',
    { name: 'repo🔥', path: '{repo}' },
    400,
    'invalid_request',
  ),
  json(
    'repository name: right-to-left override',
    'POST',
    '/v1/repositories',
    { name: 'repo\u202Egpj.exe', path: '{repo}' },
    400,
    'invalid_request',
  ),
  json(
    'repository name: SQL',
    'POST',
    '/v1/repositories',
    { name: "r'); DROP TABLE repositories;--", path: '{repo}' },
    400,
    'invalid_request',
  ),
  json(
    'repository name: lone surrogate',
    'POST',
    '/v1/repositories',
    { name: 'r\ud800', path: '{repo}' },
    400,
    'invalid_request',
  ),
  json(
    'repository path: relative traversal',
    'POST',
    '/v1/repositories',
    { name: 'trav', path: '../../etc' },
    400,
    'invalid_request',
  ),
  json('repository path: /etc', 'POST', '/v1/repositories', { name: 'etc', path: '/etc' }, 400, 'invalid_request', {
    secrets: ['/etc'],
  }),
  json('repository path: /', 'POST', '/v1/repositories', { name: 'root', path: '/' }, 400, 'invalid_request'),
  json(
    'repository path: the workspace root',
    'POST',
    '/v1/repositories',
    { name: 'wsroot', path: '{root}' },
    400,
    'invalid_request',
  ),
  json(
    'repository path: up out of the repository',
    'POST',
    '/v1/repositories',
    { name: 'up', path: '{repo}/../..' },
    400,
    'invalid_request',
  ),
  json(
    'repository path: inside .git',
    'POST',
    '/v1/repositories',
    { name: 'dotgit', path: '{repo}/.git' },
    400,
    'invalid_request',
  ),
  json(
    'repository path: NUL',
    'POST',
    '/v1/repositories',
    { name: 'nul', path: '{repo}\u0000/x' },
    400,
    'invalid_request',
  ),
  json(
    'repository path: an array',
    'POST',
    '/v1/repositories',
    { name: 'arr', path: ['{repo}'] },
    400,
    'invalid_request',
  ),
  json(
    'repository default branch: option',
    'POST',
    '/v1/repositories',
    { name: 'opt', path: '{repo}', defaultBranch: '--upload-pack=touch pwned' },
    400,
    'invalid_request',
    { secrets: ['pwned'] },
  ),
  json(
    'repository default branch: dash',
    'POST',
    '/v1/repositories',
    { name: 'dash', path: '{repo}', defaultBranch: '-main' },
    400,
    'invalid_request',
  ),
  json(
    'repository default branch: unknown',
    'POST',
    '/v1/repositories',
    { name: 'unk', path: '{repo}', defaultBranch: 'no-such-branch' },
    400,
    'invalid_request',
    { secrets: ['no-such-branch'] },
  ),
  json(
    'repository: extra field',
    'POST',
    '/v1/repositories',
    { name: 'x', path: '{repo}', admin: true },
    400,
    'invalid_request',
  ),

  // Boards.
  json('board name: missing', 'POST', '/v1/boards', {}, 400, 'invalid_request'),
  json('board name: empty', 'POST', '/v1/boards', { name: '' }, 400, 'invalid_request'),
  json('board name: NUL', 'POST', '/v1/boards', { name: 'b\u0000' }, 400, 'invalid_request'),
  json('board name: lone low surrogate', 'POST', '/v1/boards', { name: '\udc00b' }, 400, 'invalid_request'),
  json('board name: too long', 'POST', '/v1/boards', { name: 'b'.repeat(201) }, 400, 'invalid_request'),
  json('board name: an object', 'POST', '/v1/boards', { name: { $gt: '' } }, 400, 'invalid_request'),

  // Tasks: every field.
  json(
    'task title: NUL',
    'POST',
    '/v1/tasks',
    { title: 'a\u0000b', repositories: [{ repositoryId: '{repoId}' }] },
    400,
    'invalid_request',
  ),
  json(
    'task title: lone surrogate',
    'POST',
    '/v1/tasks',
    { title: 'emoji half \ud83d', repositories: [] },
    400,
    'invalid_request',
  ),
  json(
    'task title: too long',
    'POST',
    '/v1/tasks',
    { title: 't'.repeat(501), repositories: [] },
    400,
    'invalid_request',
  ),
  json('task title: a number', 'POST', '/v1/tasks', { title: 1, repositories: [] }, 400, 'invalid_request'),
  json('task title: missing', 'POST', '/v1/tasks', { repositories: [] }, 400, 'invalid_request'),
  json(
    'task repositories: a string',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: '{repoId}' },
    400,
    'invalid_request',
  ),
  json(
    'task repositories: 21 of them',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: Array.from({ length: 21 }, () => ({ repositoryId: '{repoId}' })) },
    400,
    'invalid_request',
  ),
  json(
    'task repositories: the same twice',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: '{repoId}' }, { repositoryId: '{repoId}' }] },
    400,
    'invalid_request',
  ),
  json(
    'task repositoryId: malformed',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: '{repoId}x' }] },
    400,
    'invalid_request',
  ),
  json(
    'task repositoryId: SQL',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: "' OR 1=1 --" }] },
    400,
    'invalid_request',
  ),
  json(
    'task repositoryId: unknown',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: UNKNOWN }] },
    404,
    'not_found',
  ),
  json(
    'task baseBranch: option',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: '{repoId}', baseBranch: '--orphan' }] },
    400,
    'invalid_request',
  ),
  json(
    'task baseBranch: dash',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: '{repoId}', baseBranch: '-main' }] },
    400,
    'invalid_request',
  ),
  json(
    'task baseBranch: traversal',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: '{repoId}', baseBranch: '../../etc/passwd' }] },
    400,
    'invalid_request',
  ),
  json(
    'task baseBranch: unknown',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: '{repoId}', baseBranch: 'gone-branch-x' }] },
    400,
    'invalid_request',
    { secrets: ['gone-branch-x'] },
  ),
  json(
    'task baseBranch: NUL',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: '{repoId}', baseBranch: 'main\u0000' }] },
    400,
    'invalid_request',
  ),
  json(
    'task checkoutBranch: option',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: '{repoId}', checkoutBranch: '-b evil' }] },
    400,
    'invalid_request',
    { secrets: ['evil'] },
  ),
  json(
    'task checkoutBranch: emoji',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: '{repoId}', checkoutBranch: 'feature/🔥-secret' }] },
    400,
    'invalid_request',
    { secrets: ['🔥-secret'] },
  ),
  json(
    'task checkoutBranch: right-to-left',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: '{repoId}', checkoutBranch: '\u202Eniam' }] },
    400,
    'invalid_request',
  ),
  json(
    'task checkoutBranch: a ref path',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: '{repoId}', checkoutBranch: 'refs/heads/../../x' }] },
    400,
    'invalid_request',
  ),
  json(
    'task checkoutBranch: lock file',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: '{repoId}', checkoutBranch: 'main.lock' }] },
    400,
    'invalid_request',
  ),
  json(
    'task boardId: unknown',
    'POST',
    '/v1/tasks',
    { title: 't', boardId: UNKNOWN, repositories: [] },
    404,
    'not_found',
  ),
  json(
    'task boardId: malformed',
    'POST',
    '/v1/tasks',
    { title: 't', boardId: '{board}; DROP TABLE boards', repositories: [] },
    400,
    'invalid_request',
  ),
  json(
    'task parentTaskId: unknown',
    'POST',
    '/v1/tasks',
    { title: 't', parentTaskId: UNKNOWN, repositories: [] },
    404,
    'not_found',
  ),
  json(
    'task parentTaskId: traversal',
    'POST',
    '/v1/tasks',
    { title: 't', parentTaskId: '../../etc', repositories: [] },
    400,
    'invalid_request',
  ),
  json(
    'task workspace mode: unknown',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [], workspace: { mode: 'host_root' } },
    400,
    'invalid_request',
  ),
  json(
    'task shared_group: unknown groupId',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [{ repositoryId: '{repoId}' }], workspace: { mode: 'shared_group', groupId: UNKNOWN } },
    404,
    'not_found',
  ),
  json(
    'task shared_group: malformed groupId',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [], workspace: { mode: 'shared_group', groupId: 'group-1' } },
    400,
    'invalid_request',
  ),
  json(
    'task groupId without shared_group',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [], workspace: { mode: 'new_workspace', groupId: '{group}' } },
    400,
    'invalid_request',
  ),
  json(
    'task inherit_parent without a parent',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [], workspace: { mode: 'inherit_parent' } },
    400,
    'invalid_request',
  ),
  json(
    'task quickChat: a string',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [], quickChat: 'yes' },
    400,
    'invalid_request',
  ),
  json(
    'task: extra field',
    'POST',
    '/v1/tasks',
    { title: 't', repositories: [], state: 'archived' },
    400,
    'invalid_request',
  ),

  // Launches: every field, on the task whose agent runs (an attach if admitted).
  json(
    'launch executorType: unknown',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'docker', agentProfile: 'shell', command: ['true'] },
    400,
    'invalid_request',
  ),
  json(
    'launch agentProfile: unknown',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'nope' },
    400,
    'invalid_request',
  ),
  json(
    'launch agentProfile: traversal',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: '../../bin/sh' },
    400,
    'invalid_request',
  ),
  json(
    'launch agentProfile: __proto__',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: '__proto__' },
    400,
    'invalid_request',
  ),
  json(
    'launch command: a string',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: 'rm -rf /' },
    400,
    'invalid_request',
  ),
  json(
    'launch command: empty',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: [] },
    400,
    'invalid_request',
  ),
  json(
    'launch command: NUL in an argument',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: ['sleep', '60\u0000'] },
    400,
    'invalid_request',
  ),
  json(
    'launch command: a number',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: ['sleep', 60] },
    400,
    'invalid_request',
  ),
  json(
    'launch args: NUL',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: ['sleep'], args: ['\u0000'] },
    400,
    'invalid_request',
  ),
  json(
    'launch args: lone surrogate',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: ['sleep'], args: ['\udfff'] },
    400,
    'invalid_request',
  ),
  json(
    'launch env: a name with =',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER, env: { 'A=B': 'x' } },
    400,
    'invalid_request',
  ),
  json(
    'launch env: a reserved name',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER, env: { TWS_TASK_ID: UNKNOWN } },
    400,
    'invalid_request',
  ),
  json(
    'launch env: LD_PRELOAD-like lowercase',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER, env: { ld_preload: '/tmp/x.so' } },
    400,
    'invalid_request',
  ),
  json(
    'launch env: NUL in a value',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER, env: { FOO: 'a\u0000b' } },
    400,
    'invalid_request',
  ),
  json(
    'launch env: NUL in a name',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER, env: { 'FOO\u0000': 'x' } },
    400,
    'invalid_request',
  ),
  json(
    'launch prompt: over its limit',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER, prompt: 'p'.repeat(600_000) },
    400,
    'invalid_request',
  ),
  json(
    'launch name: too long',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER, name: 'n'.repeat(201) },
    400,
    'invalid_request',
  ),
  json(
    'launch Idempotency-Key: with a space',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER },
    400,
    'invalid_request',
    { headers: { 'idempotency-key': 'a key' } },
  ),
  json(
    'launch Idempotency-Key: too long',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER },
    400,
    'invalid_request',
    { headers: { 'idempotency-key': 'k'.repeat(201) } },
  ),
  // Admitted as an attach beside the running agent, refused when its command cannot start: no session, no observation.
  json(
    'attach whose command cannot start',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: ['/nonexistent/hostile-agent'] },
    400,
    'invalid_request',
    { secrets: ['hostile-agent'] },
  ),
  json(
    'attach whose command is an option',
    'POST',
    '/v1/tasks/{task}/sessions',
    { executorType: 'worktree', agentProfile: 'shell', command: ['--upload-pack=touch pwned'] },
    400,
    'invalid_request',
    { secrets: ['pwned'] },
  ),

  // Sessions, logs, git status, archive, delete, reset, cleanup jobs, orphan sweep: the rest of their input.
  json('resume args: NUL', 'POST', '/v1/sessions/{session}/resume', { args: ['a\u0000'] }, 400, 'invalid_request'),
  json('resume: extra field', 'POST', '/v1/sessions/{session}/resume', { command: ['sh'] }, 400, 'invalid_request'),
  json(
    'resume env: reserved name',
    'POST',
    '/v1/sessions/{session}/resume',
    { env: { TWS_SESSION_ID: UNKNOWN } },
    400,
    'invalid_request',
  ),
  json('resume: text/plain', 'POST', '/v1/sessions/{session}/resume', '{}', 415, 'unsupported_media_type', {
    contentType: 'text/plain',
  }),
  {
    name: 'logs tail: negative',
    method: 'GET',
    url: '/v1/sessions/{session}/logs?tail=-1',
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'logs tail: SQL',
    method: 'GET',
    url: '/v1/sessions/{session}/logs?tail=1;DROP%20TABLE%20executions',
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'logs executionId: traversal',
    method: 'GET',
    url: '/v1/sessions/{session}/logs?executionId=..%2F..%2F{execution}',
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'logs executionId: unknown',
    method: 'GET',
    url: `/v1/sessions/{session}/logs?executionId=${UNKNOWN}`,
    status: 404,
    code: 'not_found',
  },
  json('archive cascade: a string', 'POST', '/v1/tasks/{task}/archive', { cascade: 'true' }, 400, 'invalid_request'),
  json(
    'archive: extra field',
    'POST',
    '/v1/tasks/{task}/archive',
    { cascade: false, force: true },
    400,
    'invalid_request',
  ),
  {
    name: 'delete cascade: not a flag',
    method: 'DELETE',
    url: '/v1/tasks/{task}?cascade=maybe',
    token: OPERATOR_TOKEN,
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'delete discardChanges: 1',
    method: 'DELETE',
    url: '/v1/tasks/{task}?discardChanges=1',
    token: OPERATOR_TOKEN,
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'delete: an unknown query field',
    method: 'DELETE',
    url: '/v1/tasks/{task}?force=true',
    token: OPERATOR_TOKEN,
    status: 400,
    code: 'invalid_request',
  },
  json(
    'reset abandon: a string',
    'POST',
    '/v1/tasks/{task}/environment/reset',
    { abandon: 'yes' },
    400,
    'invalid_request',
    op,
  ),
  {
    name: 'cleanup jobs taskId: SQL',
    method: 'GET',
    url: "/v1/cleanup-jobs?taskId='%20OR%20'1'='1",
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'cleanup jobs state: NUL',
    method: 'GET',
    url: '/v1/cleanup-jobs?state=%00',
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'cleanup jobs taskId: emoji',
    method: 'GET',
    url: '/v1/cleanup-jobs?taskId=%F0%9F%94%A5',
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'cleanup jobs state: too long',
    method: 'GET',
    url: `/v1/cleanup-jobs?state=${'s'.repeat(41)}`,
    status: 400,
    code: 'invalid_request',
  },
  json('orphan sweep dryRun: a string', 'POST', '/v1/orphan-sweep', { dryRun: 'false' }, 400, 'invalid_request', op),
  json(
    'orphan sweep: extra field',
    'POST',
    '/v1/orphan-sweep',
    { dryRun: true, paths: ['/'] },
    400,
    'invalid_request',
    op,
  ),
  {
    name: 'saved work limit: over 200',
    method: 'GET',
    url: '/v1/repositories/{repoId}/saved-work?limit=1000',
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'saved work cursor: not a cursor',
    method: 'GET',
    url: '/v1/repositories/{repoId}/saved-work?cursor=%27%20OR%201%3D1',
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'git status of a task: NUL in the id',
    method: 'GET',
    url: '/v1/tasks/{task}%00/git-status',
    status: 400,
    code: 'invalid_request',
  },
];

async function send(row: Hostile): Promise<{ status: number; body: any }> {
  if (row.raw) return rawRequest(h.baseUrl, fill(row.raw));
  const headers: Record<string, string> = {};
  const token = row.token === undefined ? USER_TOKEN : row.token;
  if (token) headers.authorization = `Bearer ${token}`;
  let body: Buffer | undefined;
  if (row.body !== undefined) {
    body = Buffer.from(fill(typeof row.body === 'string' ? row.body : JSON.stringify(row.body)));
    headers['content-type'] = 'application/json';
  }
  if (row.contentType === null) delete headers['content-type'];
  else if (row.contentType) headers['content-type'] = row.contentType;
  Object.assign(headers, row.headers);
  const res = await fetch(h.baseUrl + fill(row.url!), { method: row.method, headers, body });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

describe(`${ROWS.length} hostile requests`, () => {
  it('are at least 100', () => {
    expect(ROWS.length).toBeGreaterThanOrEqual(100);
    expect(new Set(ROWS.map((r) => r.name)).size).toBe(ROWS.length);
  });

  it.each(ROWS)('$name → $status $code', async (row) => {
    const res = await send(row);
    expect(res.status, JSON.stringify(res.body)?.slice(0, 300)).toBe(row.status);
    // Nothing that locates the user's files, no branch name, no token.
    expectSafeError(res.body, row.code, [
      h.scratch,
      w.repo,
      h.config.workspaceRoot,
      h.config.dataDir,
      SECRET_BRANCH,
      'hostile-secret',
      USER_TOKEN,
      OPERATOR_TOKEN,
      ...(row.secrets ?? []),
    ]);
  });

  it('changed nothing: row counts of every table, counters, the workspace root, branches and worktrees', async () => {
    const after = await worldState(h, [w.repo]);
    expect(after).toEqual(before);
    // The world is still the one the table ran against: the agent runs, the task is active.
    expect((await h.api('GET', `/v1/sessions/${w.session}`)).body.execution.state).toBe('running');
    expect((await h.api('GET', `/v1/tasks/${w.task}`)).body.state).toBe('active');
  });
});

describe("the service's own folders", () => {
  it('a task worktree under the workspace root is refused as a repository, and nothing is recorded', async () => {
    const res = await h.api('POST', '/v1/repositories', { name: 'worktree-as-repo', path: w.worktree });
    expect(res.status).toBe(400);
    expectSafeError(res.body, 'invalid_request', [w.worktree]);
    expect(
      (await h.pool.query("SELECT count(*)::int AS n FROM repositories WHERE name = 'worktree-as-repo'")).rows[0].n,
    ).toBe(0);
  });
});

describe('the log', () => {
  it('never holds a token sent in a query string (values are redacted; names stay)', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const gateway = await buildGateway({
      config: h.config,
      pool: h.pool,
      temporal: h.temporal,
      logger,
      tokens: { user: USER_TOKEN, operator: OPERATOR_TOKEN },
    });
    await gateway.listen({ host: '127.0.0.1', port: 0 });
    try {
      const address = gateway.server.address();
      const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      const secret = 'query-secret-7f3a91';
      const asked = [
        await fetch(`${base}/v1/tasks/${w.task}?token=${secret}`),
        await fetch(`${base}/v1/tasks/${w.task}?token=${USER_TOKEN}`),
        await fetch(`${base}/v1/tasks/${w.task}?access_token=${OPERATOR_TOKEN}`, {
          headers: { authorization: `Bearer ${USER_TOKEN}` },
        }),
        await fetch(`${base}/v1/cleanup-jobs?taskId=${secret}&token=${secret}`, {
          headers: { authorization: `Bearer ${USER_TOKEN}` },
        }),
        await fetch(`${base}/v1/no-such-route?token=${secret}`),
        await fetch(`${base}/v1/tasks/${w.task}?token=${secret}&pad=${'a'.repeat(9000)}`),
      ];
      // A token in the query is never a token.
      expect(asked.map((r) => r.status)).toEqual([401, 401, 200, 400, 404, 414]);
      // A request's last line is written once its answer has gone out: wait for one per request.
      await waitUntil(
        async () => lines.filter((line) => line.includes('"request completed"')).length >= asked.length,
        `a "request completed" line for each of the ${asked.length} requests`,
      );
      const log = lines.join('');
      expect(log).toContain('incoming request');
      expect(log).toContain('?token=[redacted]');
      for (const leaked of [secret, USER_TOKEN, OPERATOR_TOKEN]) expect(log).not.toContain(leaked);
    } finally {
      await gateway.close();
    }
  });
});
