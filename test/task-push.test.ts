/**
 * A repository's `remote` and `mergeStrategies` (operator fields, checked, never a credential
 * stored), and `POST /v1/tasks/:id/push` [R8.6]: a task's branch pushed to the remote under its own
 * name, through a file:// URL or a remote name, with no hook of the repository (nor the local
 * remote's) run, and a remote that does not answer refused 502 `push_failed` naming nothing of it.
 */
import { existsSync, writeFileSync, chmodSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as tws } from '../client/cli/cli';
import { CliError, EXIT } from '../client/cli/cli-io';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { PushFailure, pushRefs } from '../git/push';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { createTask, expectSafeError, launch, pidOf } from './support/scenario';
import { commitOf, git, makeRepo } from './support/world';

let h: Harness;
let n = 0;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

async function register(fields: Record<string, unknown> = {}) {
  const name = `push-${++n}`;
  const dir = makeRepo(h.scratch, name);
  const res = await h.api('POST', '/v1/repositories', { name, path: dir, ...fields }, OPERATOR_TOKEN);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { dir, name, id: res.body.id as string, body: res.body };
}

const bare = (name: string) => {
  const dir = path.join(h.scratch, `${name}.git`);
  git(h.scratch, 'init', '-q', '--bare', dir);
  return dir;
};

const cliEnv = () => ({ TWS_API_URL: h.baseUrl, TWS_OPERATOR_TOKEN: OPERATOR_TOKEN });

/** A hook that leaves a file behind if it ever runs. */
function plantHook(hooksDir: string, hook: string): string {
  const marker = path.join(h.scratch, `${hook}-${++n}-ran`);
  writeFileSync(path.join(hooksDir, hook), `#!/bin/sh\ntouch '${marker}'\n`);
  chmodSync(path.join(hooksDir, hook), 0o755);
  return marker;
}

/** A task launched in the repository, with one commit on its branch: the commit. */
async function taskWithCommit(repositoryId: string, repoName: string) {
  const taskId = await createTask(h, [repositoryId]);
  const started = await launch(h, taskId);
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  await pidOf(h, started.body.sessionId);
  const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), repoName);
  writeFileSync(path.join(worktree, 'work.txt'), 'the task did this\n');
  git(worktree, 'add', 'work.txt');
  git(worktree, 'commit', '-q', '-m', 'work');
  return { taskId, commit: commitOf(worktree, 'HEAD') };
}

describe("a repository's remote and merge strategies", () => {
  it('are stored, answered and changed by an operator; null strategies mean all', async () => {
    const made = await register({ remote: 'origin', mergeStrategies: ['squash', 'fast_forward', 'squash'] });
    expect(made.body).toMatchObject({ remote: 'origin', mergeStrategies: ['squash', 'fast_forward'] });
    const listed = (await h.api('GET', '/v1/repositories?limit=200')).body.items.find(
      (r: { id: string }) => r.id === made.id,
    );
    expect(listed).toEqual(made.body);
    const plain = await register();
    expect(plain.body).toMatchObject({ remote: null, mergeStrategies: null });

    const url = `file://${path.join(h.scratch, 'elsewhere.git')}`;
    const patched = await h.api(
      'PATCH',
      `/v1/repositories/${made.id}`,
      { remote: url, mergeStrategies: null },
      OPERATOR_TOKEN,
    );
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ remote: url, mergeStrategies: null });
    const cleared = await h.api('PATCH', `/v1/repositories/${made.id}`, { remote: null }, OPERATOR_TOKEN);
    expect(cleared.body.remote).toBeNull();

    // A user token may not name them.
    const byUser = await h.api('PATCH', `/v1/repositories/${made.id}`, { remote: 'origin' }, USER_TOKEN);
    expect(byUser.status).toBe(403);
    expect(
      (await h.api('POST', '/v1/repositories', { name: 'push-user', path: plain.dir, mergeStrategies: ['merge'] }))
        .status,
    ).toBe(403);
  });

  it('an unknown strategy, an empty list or a bad remote is refused, and nothing changes', async () => {
    const made = await register({ mergeStrategies: ['merge'] });
    for (const body of [
      { mergeStrategies: ['octopus'] },
      { mergeStrategies: [] },
      { remote: 'git://example.com/r.git' },
      { remote: 'http://example.com/r.git' },
      { remote: 'ext::sh -c touch% /tmp/x' },
      { remote: '-oProxyCommand=x' },
      { remote: 'git@example.com:org/r.git' },
    ]) {
      const res = await h.api('PATCH', `/v1/repositories/${made.id}`, body, OPERATOR_TOKEN);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expectSafeError(res.body, 'invalid_request');
    }
    const row = await h.pool.query('SELECT remote, merge_strategies FROM repositories WHERE id = $1', [made.id]);
    expect(row.rows[0]).toEqual({ remote: null, merge_strategies: ['merge'] });
  });

  it('a URL carrying credentials is refused 400: never stored, never answered', async () => {
    const secret = 'ghp_s3cr3tT0ken';
    for (const remote of [
      `https://user:${secret}@example.com/org/r.git`,
      `https://${secret}@example.com/org/r.git`,
      `ssh://git:${secret}@example.com/org/r.git`,
      `https://example.com/org/r.git?access_token=${secret}`,
    ]) {
      const name = `push-cred-${++n}`;
      const dir = makeRepo(h.scratch, name);
      const res = await h.api('POST', '/v1/repositories', { name, path: dir, remote }, OPERATOR_TOKEN);
      expect(res.status, remote).toBe(400);
      expectSafeError(res.body, 'invalid_request', [secret, 'example.com']);
      expect(res.body.error.message).toMatch(/credentials/);
      expect((await h.pool.query('SELECT 1 FROM repositories WHERE name = $1', [name])).rowCount).toBe(0);
    }
    const made = await register();
    const res = await h.api(
      'PATCH',
      `/v1/repositories/${made.id}`,
      { remote: `https://u:${secret}@example.com/r.git` },
      OPERATOR_TOKEN,
    );
    expect(res.status).toBe(400);
    expectSafeError(res.body, 'invalid_request', [secret]);
    const stored = await h.pool.query(
      "SELECT count(*)::int AS n FROM repositories WHERE remote LIKE '%' || $1 || '%'",
      [secret],
    );
    expect(stored.rows[0].n).toBe(0);
    // A URL without them is fine, user name included for ssh.
    const ok = await h.api(
      'PATCH',
      `/v1/repositories/${made.id}`,
      { remote: 'ssh://git@example.com:2222/org/r.git' },
      OPERATOR_TOKEN,
    );
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  });
});

describe('pushing a task [R8.6]', () => {
  it("pushes the task branch to a file:// remote under its own name; the repository's hooks and the remote's never run", async () => {
    const remote = bare('push-url-remote');
    const made = await register({ remote: `file://${remote}` });
    const prePush = plantHook(path.join(made.dir, '.git', 'hooks'), 'pre-push');
    const preReceive = plantHook(path.join(remote, 'hooks'), 'pre-receive');
    const { taskId, commit } = await taskWithCommit(made.id, made.name);

    const res = await h.api('POST', `/v1/tasks/${taskId}/push`, {});
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const ref = `refs/heads/${taskBranchName(taskId)}`;
    expect(res.body).toEqual({ repositories: [{ repositoryId: made.id, ref, commit }] });
    expect(commitOf(remote, ref)).toBe(commit);
    expect(existsSync(prePush)).toBe(false);
    expect(existsSync(preReceive)).toBe(false);
    // The control: a person's own push from that checkout runs both.
    git(made.dir, 'push', '-q', remote, 'main:refs/heads/control');
    expect(existsSync(prePush)).toBe(true);
    expect(existsSync(preReceive)).toBe(true);

    // The same push again is the same answer; a body is optional; `tws push` says the same.
    const again = await h.api('POST', `/v1/tasks/${taskId}/push`);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toEqual(res.body);
    let printed = '';
    const code = await tws(['push', taskId, '--json'], cliEnv(), (s) => (printed += s));
    expect(code).toBe(EXIT.ok);
    expect(JSON.parse(printed)).toEqual(res.body);
  });

  it('pushes through a remote name of the repository, and only the repositories asked for', async () => {
    const remote = bare('push-named-remote');
    const made = await register({ remote: 'upstream' });
    git(made.dir, 'remote', 'add', 'upstream', remote);
    const { taskId, commit } = await taskWithCommit(made.id, made.name);
    const res = await h.api('POST', `/v1/tasks/${taskId}/push`, { repositoryIds: [made.id] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(commitOf(remote, `refs/heads/${taskBranchName(taskId)}`)).toBe(commit);

    const other = await register();
    const notOurs = await h.api('POST', `/v1/tasks/${taskId}/push`, { repositoryIds: [other.id] });
    expect(notOurs.status).toBe(400);
    expect(notOurs.body.error).toMatchObject({ reason: 'not_a_task_repository', repositoryId: other.id });
  });

  it('a repository without a remote is refused 400 no_remote; a task not launched, no_task_branch', async () => {
    const made = await register();
    const { taskId } = await taskWithCommit(made.id, made.name);
    const res = await h.api('POST', `/v1/tasks/${taskId}/push`, {});
    expect(res.status).toBe(400);
    expectSafeError(res.body, 'invalid_request');
    expect(res.body.error).toMatchObject({ reason: 'no_remote', repositoryId: made.id });
    const refused = await tws(['push', taskId], cliEnv(), () => undefined).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(CliError);
    expect((refused as CliError).code).toBe(EXIT.refused);

    const withRemote = await register({ remote: 'origin' });
    const fresh = await createTask(h, [withRemote.id]);
    const none = await h.api('POST', `/v1/tasks/${fresh}/push`, {});
    expect(none.status).toBe(400);
    expect(none.body.error).toMatchObject({ reason: 'no_task_branch', repositoryId: withRemote.id });
    expect((await h.api('POST', '/v1/tasks/00000000-0000-4000-8000-000000000000/push', {})).status).toBe(404);
  });

  it('a remote that cannot be reached is 502 push_failed, naming no path, URL or branch', async () => {
    const made = await register({ remote: 'file:///nonexistent/remote.git' });
    const { taskId } = await taskWithCommit(made.id, made.name);
    const res = await h.api('POST', `/v1/tasks/${taskId}/push`, {});
    expect(res.status, JSON.stringify(res.body)).toBe(502);
    expectSafeError(res.body, 'push_failed', ['nonexistent', made.dir, taskBranchName(taskId)]);
    expect(res.body.error).toMatchObject({ reason: 'unreachable', repositoryId: made.id, action: 'retry' });

    // A remote name the repository does not have: the same code, its own reason.
    await h.api('PATCH', `/v1/repositories/${made.id}`, { remote: 'no-such-remote' }, OPERATOR_TOKEN);
    const unknown = await h.api('POST', `/v1/tasks/${taskId}/push`, {});
    expect(unknown.status).toBe(502);
    expectSafeError(unknown.body, 'push_failed', ['no-such-remote']);
    expect(unknown.body.error.reason).toBe('remote_unknown');
  });
});

describe('pushRefs (git/push.ts): what runs for an ssh remote', () => {
  it("runs the operator's ssh command (TWS_PUSH_GIT_CONFIG), never the repository's own", async () => {
    const dir = makeRepo(h.scratch, `push-ssh-${++n}`);
    const repoMarker = path.join(h.scratch, `repo-ssh-${n}-ran`);
    const operatorMarker = path.join(h.scratch, `operator-ssh-${n}-ran`);
    git(dir, 'config', 'core.sshCommand', `touch '${repoMarker}'; false`);
    git(dir, 'config', 'credential.helper', `!touch '${repoMarker}'`);
    const operatorConfig = path.join(h.scratch, `push-config-${n}`);
    writeFileSync(
      operatorConfig,
      `[core]\n\tsshCommand = touch '${operatorMarker}' && false\n[core]\n\thooksPath = /tmp\n`,
    );
    const err = await pushRefs(
      {
        sourcePath: dir,
        remote: 'ssh://git@127.0.0.1:1/r.git',
        refs: [{ local: 'refs/heads/main', remote: 'refs/heads/main' }],
      },
      { binary: 'git', operatorConfig },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PushFailure);
    expect(existsSync(operatorMarker)).toBe(true);
    expect(existsSync(repoMarker)).toBe(false);
    // git's words, as the log gets them, name no host, URL or path.
    expect((err as PushFailure).gitSays.join('\n')).not.toMatch(/127\.0\.0\.1|ssh:\/\/|\/tmp\//);

    // A missing ref is its own reason, before anything is run.
    const missing = await pushRefs(
      {
        sourcePath: dir,
        remote: 'ssh://git@127.0.0.1:1/r.git',
        refs: [{ local: 'refs/heads/none', remote: 'refs/heads/none' }],
      },
      { binary: 'git', operatorConfig: null },
    ).catch((e: unknown) => e);
    expect((missing as PushFailure).reason).toBe('no_such_ref');
  });
});
