/**
 * A user's whole journey through `tws`, as the package's bin runs it against a running system:
 * repo add, task new, launch an agent that commits, status, the board (followed live, then read
 * once), archive and unarchive, resume, and delete with and without consent to lose uncommitted
 * work. The user's commands go with the user token; an operator's command with it is refused by
 * the service (exit 1, its code). `--json` bodies and exit codes are asserted, and the world (rows,
 * files) after each step.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServices } from '../client/launcher/service-build';
import { taskDirName } from '../domain/task-layout';
import { waitForJob } from './support/cleanup';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { agentEnded, waitUntil } from './support/scenario';
import { makeRepo } from './support/world';

let h: Harness;
const BIN = path.resolve('bin/tws.mjs');

beforeAll(async () => {
  buildServices(path.resolve('.'));
  h = await createHarness();
});
afterAll(async () => h?.close());

/** The user's environment: the API and the user token only (an `undefined` removes a variable). */
const userEnv = (env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv => {
  const merged: NodeJS.ProcessEnv = {
    ...process.env,
    TWS_API_URL: h.baseUrl,
    TWS_USER_TOKEN: USER_TOKEN,
    TWS_OPERATOR_TOKEN: undefined,
    TWS_DATA_DIR: undefined,
    ...env,
  };
  for (const [name, value] of Object.entries(merged)) if (value === undefined) delete merged[name];
  return merged;
};

async function tws(args: string[], env: Record<string, string | undefined> = {}) {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], {
      cwd: h.scratch,
      env: userEnv(env),
      encoding: 'utf8',
    });
    return { code: 0, stdout, stderr };
  } catch (err: any) {
    return { code: err.code as number, stdout: err.stdout as string, stderr: err.stderr as string };
  }
}

/** `tws board -f --json` running: each board it printed, parsed, as they come. */
function followBoard(env: Record<string, string | undefined> = {}) {
  const child = spawn(process.execPath, [BIN, 'board', '-f', '--json'], { cwd: h.scratch, env: userEnv(env) });
  const boards: Record<string, { id: string }[]>[] = [];
  let buffer = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n')) {
      boards.push(JSON.parse(buffer.slice(0, end)));
      buffer = buffer.slice(end + 1);
    }
  });
  const columnOf = (board: Record<string, { id: string }[]>, taskId: string) =>
    Object.keys(board).find((column) => board[column]!.some((t) => t.id === taskId));
  return {
    boards,
    columnOf,
    /** Waits for a board that shows the task in `column`. */
    shows: (taskId: string, column: string) =>
      waitUntil(
        async () => boards.some((b) => columnOf(b, taskId) === column),
        `the followed board to show ${taskId} ${column}`,
        30_000,
      ),
    stop: () => child.kill('SIGTERM'),
  };
}

/** The agent: commits a file, leaves another uncommitted, and waits for the test's word (a file named go). */
const AGENT = String.raw`
set -e
g() { git -c user.name=agent -c user.email=agent@example.com "$@"; }
echo 'from the agent' > work.txt
g add work.txt
g commit -q -m 'agent work'
echo 'not committed' > draft.txt
echo committed
while [ ! -e go ]; do sleep 0.2; done
`;

describe('tws, a user', () => {
  it('adds a repository, makes a task, launches an agent that commits, sees its status and the board live, archives and unarchives it', async () => {
    const dir = makeRepo(h.scratch, 'journey');
    const added = await tws(['repo', 'add', 'journey', dir, '--json']);
    expect(added.code, added.stderr).toBe(0);
    const repo = JSON.parse(added.stdout);
    expect(repo).toMatchObject({ name: 'journey', defaultBranch: 'main' });
    expect((await h.pool.query('SELECT name FROM repositories WHERE id = $1', [repo.id])).rows).toEqual([
      { name: 'journey' },
    ]);
    const listed = await tws(['repo', 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`^${repo.id}\\s+journey\\s+main`, 'm'));
    expect(listed.stdout).not.toContain(dir); // never a path

    const made = await tws(['task', 'new', 'Journey: the agent commits', '--repository', repo.id, '--json']);
    expect(made.code, made.stderr).toBe(0);
    const task = JSON.parse(made.stdout);
    expect(task).toMatchObject({ title: 'Journey: the agent commits', state: 'active' });
    expect((await h.pool.query('SELECT title FROM tasks WHERE id = $1', [task.id])).rows).toHaveLength(1);

    const board = followBoard();
    try {
      await board.shows(task.id, 'idle');
      const launched = await tws(['launch', task.id, '--json', '--', 'sh', '-c', AGENT]);
      expect(launched.code, launched.stderr).toBe(0);
      const session = JSON.parse(launched.stdout);
      expect(session).toMatchObject({ state: 'running' });
      await board.shows(task.id, 'running');

      // Its commit and its uncommitted file, per repository, as git sees them in the workspace.
      let status: any;
      await waitUntil(
        async () => {
          const res = await tws(['status', task.id, '--json']);
          expect(res.code, res.stderr).toBe(0);
          status = JSON.parse(res.stdout);
          return status.repositories[0]?.ahead === 1;
        },
        "the agent's commit in git status",
        30_000,
      );
      expect(status.repositories).toEqual([
        expect.objectContaining({
          repositoryId: repo.id,
          ahead: 1,
          behind: 0,
          files: [{ path: 'draft.txt', status: expect.any(String) }],
        }),
      ]);
      const human = await tws(['status', task.id]);
      expect(human.stdout).toMatch(new RegExp(`^${repo.id}  \\S+ [0-9a-f]{7}  ahead 1, behind 0$`, 'm'));
      expect(human.stdout).toMatch(/^ {2}\S+\s+draft\.txt$/m);

      // The agent ends: the board, followed, moves the task to idle.
      const worktree = path.join(h.config.workspaceRoot, taskDirName(task.id), 'journey');
      writeFileSync(path.join(worktree, 'go'), '');
      expect((await agentEnded(h, session.sessionId)).state).toBe('exited');
      const runningAt = board.boards.findIndex((b) => board.columnOf(b, task.id) === 'running');
      await waitUntil(
        async () => board.boards.slice(runningAt + 1).some((b) => board.columnOf(b, task.id) === 'idle'),
        'the followed board to show the task idle again',
        30_000,
      );
    } finally {
      board.stop();
    }
    const once = await tws(['board', '--json']);
    expect(once.code, once.stderr).toBe(0);
    expect(Object.keys(JSON.parse(once.stdout))).toEqual(['running', 'idle', 'attention', 'merged', 'archived']);
    expect(JSON.parse(once.stdout).idle).toContainEqual(expect.objectContaining({ id: task.id }));
    expect((await tws(['board'])).stdout).toMatch(
      new RegExp(`^idle \\(\\d+\\)\\n(.*\\n)*  ${task.id}  Journey: the agent commits$`, 'm'),
    );

    // A launch followed (-f): its log, then how it ended.
    const followed = await tws(['launch', task.id, '-f', '--', 'sh', '-c', 'echo followed to the end']);
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout).toMatch(/^session \S+ running\nfollowed to the end\nsession \S+ exited\n$/);

    const archived = await tws(['task', 'archive', task.id, '--json']);
    expect(archived.code, archived.stderr).toBe(0);
    const { operationId } = JSON.parse(archived.stdout);
    await waitForJob(h, operationId);
    expect(JSON.parse((await tws(['task', 'show', task.id, '--json'])).stdout).state).toBe('archived');
    expect(JSON.parse((await tws(['board', '--json'])).stdout).archived).toContainEqual(
      expect.objectContaining({ id: task.id }),
    );
    const back = await tws(['task', 'unarchive', task.id, '--json']);
    expect(back.code, back.stderr).toBe(0);
    expect(JSON.parse(back.stdout)).toMatchObject({ id: task.id, state: 'active' });
    const active = JSON.parse((await tws(['task', 'list', '--json'])).stdout) as { id: string }[];
    expect(active.map((t) => t.id)).toContain(task.id);
  });

  it('deletes a task with uncommitted work only with --discard (and the operator token); a user token is refused; usage and missing ids exit 2 and 4', async () => {
    const dir = makeRepo(h.scratch, 'journey-delete');
    const repo = JSON.parse((await tws(['repo', 'add', 'journey-delete', dir, '--json'])).stdout);
    const task = JSON.parse((await tws(['task', 'new', 'To delete', '--repository', repo.id, '--json'])).stdout);
    const launched = await tws(['launch', task.id, '--json', '--', 'sh', '-c', 'echo draft > draft.txt']);
    expect(launched.code, launched.stderr).toBe(0);
    await agentEnded(h, JSON.parse(launched.stdout).sessionId);
    const worktree = path.join(h.config.workspaceRoot, taskDirName(task.id), 'journey-delete');

    // resume a task: its newest session runs again, followed to its end.
    const resumed = await tws(['resume', task.id, '-f', '--json']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ id: JSON.parse(launched.stdout).sessionId, state: 'exited' });

    // The user's token cannot delete (the route is the operator's): the service's refusal, exit 1.
    const asUser = await tws(['task', 'delete', task.id, '--json']);
    expect(asUser.code).toBe(1);
    expect(JSON.parse(asUser.stdout).error).toMatchObject({ code: 'forbidden' });
    expect(asUser.stderr).toMatch(/^tws: refused \(forbidden: .*operator role/);

    // The operator's, without consent: refused with the code and what to do; nothing changes.
    const operator = { TWS_OPERATOR_TOKEN: OPERATOR_TOKEN };
    const unasked = await tws(['task', 'delete', task.id, '--json'], operator);
    expect(unasked.code).toBe(1);
    expect(JSON.parse(unasked.stdout).error).toMatchObject({
      code: 'task_delete_dirty_worktree',
      action: 'discard_or_commit',
    });
    expect(unasked.stderr).toContain('task_delete_dirty_worktree');
    expect(unasked.stderr).toContain('action: discard_or_commit');
    expect(existsSync(path.join(worktree, 'draft.txt'))).toBe(true);
    expect((await h.pool.query('SELECT id FROM tasks WHERE id = $1', [task.id])).rows).toHaveLength(1);

    const discarded = await tws(['task', 'delete', task.id, '--discard', '--json'], operator);
    expect(discarded.code, discarded.stderr).toBe(0);
    await waitForJob(h, JSON.parse(discarded.stdout).operationId);
    expect(existsSync(worktree)).toBe(false);
    expect((await tws(['task', 'show', task.id])).code).toBe(4);

    for (const args of [
      ['task', 'new'],
      ['task', 'frobnicate'],
      ['task', 'list', '--discard'],
      ['launch', task.id],
      ['launch', task.id, '--executor', 'sandbox', '--', 'true'],
      ['repo', 'add', 'only-a-name'],
      ['status', 'not-an-id'],
    ])
      expect((await tws(args)).code, args.join(' ')).toBe(2);
    expect((await tws(['status', '00000000-0000-4000-8000-000000000000'])).code).toBe(4);
  });

  it("stop TASK stops the task's running agents and keeps their files; again, it says none runs; an older command's refusal prints its body with --json", async () => {
    const dir = makeRepo(h.scratch, 'journey-stop');
    const repo = JSON.parse((await tws(['repo', 'add', 'journey-stop', dir, '--json'])).stdout);
    const task = JSON.parse((await tws(['task', 'new', 'To stop', '--repository', repo.id, '--json'])).stdout);
    const launched = await tws(['launch', task.id, '--json', '--', 'sh', '-c', 'echo draft > draft.txt; sleep 600']);
    expect(launched.code, launched.stderr).toBe(0);
    const sessionId = JSON.parse(launched.stdout).sessionId as string;
    const worktree = path.join(h.config.workspaceRoot, taskDirName(task.id), 'journey-stop');
    await waitUntil(async () => existsSync(path.join(worktree, 'draft.txt')), 'the agent to write its draft', 30_000);

    const stopped = await tws(['stop', task.id, '--json']);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(JSON.parse(stopped.stdout)).toEqual([{ id: sessionId, taskId: task.id, state: 'stopped' }]);
    expect((await h.pool.query('SELECT state FROM sessions WHERE id = $1', [sessionId])).rows).toEqual([
      { state: 'stopped' },
    ]);
    expect(existsSync(path.join(worktree, 'draft.txt'))).toBe(true);
    // Nothing left running: said, exit 0; --json: an empty list. A session id still stops that session.
    expect(await tws(['stop', task.id])).toMatchObject({
      code: 0,
      stdout: `task ${task.id} has no agent running or starting: nothing to stop\n`,
    });
    expect(await tws(['stop', task.id, '--json'])).toMatchObject({ code: 0, stdout: '[]\n' });
    expect(await tws(['stop', sessionId])).toMatchObject({ code: 0, stdout: `${sessionId} stopped\n` });
    const nowhere = await tws(['stop', '00000000-0000-4000-8000-000000000000', '--json']);
    expect(nowhere.code).toBe(4);
    expect(JSON.parse(nowhere.stdout).error).toMatchObject({ code: expect.stringMatching(/not_found$/) });

    // Older commands refuse as the new ones do: the API's body on stdout with --json, exit 1; without, stderr only.
    for (const args of [['sweep'], ['retry', sessionId], ['cancel', sessionId]]) {
      const refused = await tws([...args, '--json']);
      expect(refused.code, args.join(' ')).toBe(1);
      expect(JSON.parse(refused.stdout).error, args.join(' ')).toMatchObject({
        code: 'forbidden',
        message: expect.stringContaining('operator'),
      });
      expect(refused.stderr).toMatch(/^tws: refused \(forbidden: /);
      const plain = await tws(args);
      expect(plain).toMatchObject({ code: 1, stdout: '' });
    }
  });

  it("sends each command its role's token: the data folder's user token for a user's command, its operator token for an operator's", async () => {
    const data = mkdtempSync(path.join(h.scratch, 'data-'));
    // A wrong operator token: user commands still work (they never send it); operator ones are refused.
    writeFileSync(path.join(data, 'secrets.json'), JSON.stringify({ userToken: USER_TOKEN, operatorToken: 'wrong' }));
    writeFileSync(path.join(data, 'api.json'), JSON.stringify({ url: h.baseUrl, pid: process.pid }));
    const env = { TWS_API_URL: undefined, TWS_USER_TOKEN: undefined, TWS_DATA_DIR: data };
    const repos = await tws(['repo', 'list', '--json'], env);
    expect(repos.code, repos.stderr).toBe(0);
    const sweep = await tws(['sweep', '--dry-run'], env);
    expect(sweep.code).toBe(1);
    expect(sweep.stderr).toMatch(/^tws: refused \(unauthorized/);

    writeFileSync(
      path.join(data, 'secrets.json'),
      JSON.stringify({ userToken: 'wrong', operatorToken: OPERATOR_TOKEN }),
    );
    expect((await tws(['sweep', '--dry-run', '--json'], env)).code).toBe(0);
    expect((await tws(['repo', 'list'], env)).code).toBe(1);
  });

  it('board -f joins a dropped feed again with Last-Event-ID, and shows what changed after it', async () => {
    // A pass-through to the gateway that records each GET /v1/events and can drop the open ones.
    const feeds: { lastEventId: string | undefined; drop: () => void }[] = [];
    const proxy = http.createServer((req, res) => {
      const upstream = http.request(
        `${h.baseUrl}${req.url}`,
        { method: req.method, headers: { ...req.headers, host: new URL(h.baseUrl).host } },
        (answer) => {
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res);
        },
      );
      if (req.url?.startsWith('/v1/events'))
        feeds.push({
          lastEventId: req.headers['last-event-id'] as string | undefined,
          drop: () => {
            upstream.destroy();
            res.destroy();
          },
        });
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const board = followBoard({ TWS_API_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` });
    try {
      const repo = JSON.parse(
        (await tws(['repo', 'add', 'journey-feed', makeRepo(h.scratch, 'journey-feed'), '--json'])).stdout,
      );
      const before = JSON.parse(
        (await tws(['task', 'new', 'Before the drop', '--repository', repo.id, '--json'])).stdout,
      );
      await board.shows(before.id, 'idle');
      expect(feeds).toHaveLength(1);
      expect(feeds[0]!.lastEventId).toBeUndefined();
      // The feed has told it of the task's creation (the change log's row for it) by now.
      const created = Number(
        (await h.pool.query("SELECT id FROM events WHERE entity_id = $1 AND change = 'created'", [before.id])).rows[0]
          .id,
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      const newest = Number((await h.pool.query('SELECT max(id) AS id FROM events')).rows[0].id);
      feeds[0]!.drop();
      await waitUntil(async () => feeds.length === 2, 'the board to join the feed again', 15_000);
      // It asks for what came after the last change it saw: not from the start, not past the log.
      const resumedAt = Number(feeds[1]!.lastEventId);
      expect(resumedAt).toBeGreaterThanOrEqual(created);
      expect(resumedAt).toBeLessThanOrEqual(newest);
      const after = JSON.parse(
        (await tws(['task', 'new', 'After the drop', '--repository', repo.id, '--json'])).stdout,
      );
      await board.shows(after.id, 'idle');
    } finally {
      board.stop();
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});
