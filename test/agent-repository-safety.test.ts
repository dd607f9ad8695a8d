/**
 * The source repository is the user's: a sandboxed worktree agent adds to its own task
 * and nothing else. As a user would find it, with the sandbox on: an agent that deletes another
 * task's branch, moves or deletes the base branch, tags, writes a saved-work ref, deletes the
 * repository's objects or rewrites `packed-refs` fails to, and the repository's `git fsck` and
 * every other ref are unchanged; its own commits, amends and resets work, the service's git status
 * sees them while it runs, and once it ends (and after an archive, and through a delete's merge
 * check) they are in the repository's own store, readable by a user's plain git.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentIsolation } from '../executors/host/agent-sandbox';
import { objectStoreKeyDir, objectStoreOf } from '../git/agent-objects';
import { taskBranchName, worktreePath } from '../domain/task-layout';
import { archive, deleteTask, waitForJob } from './support/cleanup';
import { harnessesPerTest, OPERATOR_TOKEN, type Harness } from './support/harness';
import { agentEnded, agentOutputUntil, createTask, expectSafeError, launch, registerRepo } from './support/scenario';
import { CHECKOUT_OWNER, git, makeRepo } from './support/world';

const { harness } = harnessesPerTest();
const AS_AGENT = '-c user.name=agent -c user.email=agent@example.com';

/** Every ref of the repository but `except`, with its commit. */
const refsBut = (repo: string, except: string): string =>
  git(repo, 'for-each-ref', '--format=%(objectname) %(refname)')
    .split('\n')
    .filter((line) => !line.endsWith(` refs/heads/${except}`))
    .join('\n');

/** What the agent tries against the repository, each line `<what>: written` or `<what>: refused`. */
function destructiveAttempts(otherBranch: string): string {
  const tries = [
    ['delete another task branch', `git update-ref -d refs/heads/${otherBranch}`],
    ['move the base branch', `git update-ref refs/heads/main $(git ${AS_AGENT} commit-tree -m evil HEAD^{tree})`],
    ['delete the base branch', 'git branch -D main'],
    ['tag', 'git tag evil'],
    ['saved-work ref', 'git update-ref refs/task-workspaces/saved/x/y HEAD'],
    ['delete the objects', 'rm -rf "$d"/objects/tws-base/* && ! ls "$d"/objects/tws-base/* >/dev/null 2>&1'],
    ['rewrite packed-refs', 'echo > "$d/packed-refs"'],
    ['pack the refs', 'git pack-refs --all'],
  ];
  return tries
    .map(([what, cmd]) => `if (${cmd}) >/dev/null 2>&1; then echo "${what}: written"; else echo "${what}: refused"; fi`)
    .join('; ');
}
const ATTEMPTS = [
  'delete another task branch',
  'move the base branch',
  'delete the base branch',
  'tag',
  'saved-work ref',
  'delete the objects',
  'rewrite packed-refs',
  'pack the refs',
];

/** The agent: every destructive attempt, then its own commit, a second one, an amend and a reset, then its head. */
function agentScript(otherBranch: string): string {
  return [
    'd=$(git rev-parse --git-common-dir)',
    destructiveAttempts(otherBranch),
    `echo one > one.txt && git add one.txt && git ${AS_AGENT} commit -q -m one && echo committed`,
    `echo two > two.txt && git add two.txt && git ${AS_AGENT} commit -q -m two && git ${AS_AGENT} commit -q --amend -m "two, amended" && echo amended`,
    'git reset -q --hard HEAD~1 && echo reset',
    `echo three > three.txt && git add three.txt && git ${AS_AGENT} commit -q -m three && echo "head: $(git rev-parse HEAD)"`,
    'echo done; sleep 600',
  ].join('; ');
}

async function repositoryWithOtherTask(h: Harness, name: string) {
  expect(await agentIsolation(h.config.agentSandbox)).toBe('bwrap');
  const repo = makeRepo(h.scratch, name);
  git(repo, 'tag', 'v1');
  const repositoryId = await registerRepo(h, repo, name);
  const other = await createTask(h, [repositoryId]);
  expect((await launch(h, other, { command: ['sleep', '600'] })).status).toBe(201);
  return { repo, repositoryId, otherBranch: taskBranchName(other) };
}

function expectRepositoryIntact(repo: string, before: string, ownBranch: string): void {
  expect(refsBut(repo, ownBranch)).toBe(before);
  // fsck exits non-zero on a missing or corrupt object.
  git(repo, 'fsck', '--strict');
  expect(git(repo, 'log', '--format=%s', 'main')).toBe('initial');
}

async function launchDestructiveAgent(h: Harness, repositoryId: string, otherBranch: string) {
  const taskId = await createTask(h, [repositoryId]);
  const res = await launch(h, taskId, { command: ['sh', '-c', agentScript(otherBranch)] });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const out = await agentOutputUntil(h, res.body.executionId, 'done');
  for (const what of ATTEMPTS) expect(out, out).toContain(`${what}: refused`);
  for (const step of ['committed', 'amended', 'reset']) expect(out, out).toContain(step);
  const head = /head: ([0-9a-f]{40})/.exec(out)![1]!;
  return { taskId, sessionId: res.body.sessionId as string, head };
}

/** The commit and its parents are in the repository's own store: a user's plain git reads them. */
function expectHome(repo: string, head: string): void {
  expect(git(repo, 'log', '--format=%s', head)).toBe('three\none\ninitial');
  expect(git(repo, 'cat-file', '-t', `${head}^{tree}`)).toBe('tree');
}

describe('an agent can only add to its own task', () => {
  it('destructive writes are refused, its own branch moves, git status sees it while it runs, and its commits are home when it ends and after an archive', async () => {
    const h = await harness();
    const { repo, repositoryId, otherBranch } = await repositoryWithOtherTask(h, 'guarded');
    const { taskId, sessionId, head } = await launchDestructiveAgent(h, repositoryId, otherBranch);
    const before = refsBut(repo, taskBranchName(taskId));
    expect(before).toContain(`refs/heads/${otherBranch}`);
    expect(before).toContain('refs/tags/v1');

    // While it runs: the service's git status brings its objects home and reads its branch.
    const status = await h.api('GET', `/v1/tasks/${taskId}/git-status`);
    expect(status.status, JSON.stringify(status.body)).toBe(200);
    expect(status.body.repositories[0]).toMatchObject({ branch: taskBranchName(taskId), head, ahead: 2 });
    expect(git(repo, 'rev-parse', taskBranchName(taskId))).toBe(head);
    expectHome(repo, head);
    expectRepositoryIntact(repo, before, taskBranchName(taskId));

    // It ends: its task store keeps nothing that is not home.
    expect((await h.api('POST', `/v1/sessions/${sessionId}/stop`)).status).toBe(200);
    await agentEnded(h, sessionId);
    const store = objectStoreOf(
      objectStoreKeyDir(h.config.dataDir, worktreePath(h.config.workspaceRoot, taskId, 'guarded')),
    );
    expect(
      readdirSync(store).filter((name) => /^[0-9a-f]{2}$/.test(name) && readdirSync(path.join(store, name)).length > 0),
    ).toEqual([]);
    expectHome(repo, head);

    // Archived: the worktree and its store are gone, the branch and its commits stay.
    const job = await archive(h, taskId);
    await waitForJob(h, job.operationId);
    expect(existsSync(store)).toBe(false);
    expect(git(repo, 'rev-parse', taskBranchName(taskId))).toBe(head);
    expectHome(repo, head);
    expectRepositoryIntact(repo, before, taskBranchName(taskId));
  });

  it("the merge check of a delete, with the agent still running, sees the agent's commits: the unmerged branch is kept, readable", async () => {
    const h = await harness();
    const { repo, repositoryId, otherBranch } = await repositoryWithOtherTask(h, 'checked');
    const { taskId, head } = await launchDestructiveAgent(h, repositoryId, otherBranch);
    const before = refsBut(repo, taskBranchName(taskId));
    const res = await deleteTask(h, taskId);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const job = await waitForJob(h, res.body.operationId);
    expect(job.report.branches).toEqual([{ repositoryId, branch: taskBranchName(taskId), outcome: 'kept_unmerged' }]);
    expect(git(repo, 'rev-parse', taskBranchName(taskId))).toBe(head);
    expectHome(repo, head);
    expectRepositoryIntact(repo, before, taskBranchName(taskId));
  });

  it('a local launch in a checkout owned by root is refused, saying why and what to do, with no path; given to its user, it runs', async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'rooted');
    execFileSync('chown', ['-R', '0:0', repo]);
    const taskId = await createTask(h, [await registerRepo(h, repo, 'rooted')]);
    const refused = await launch(h, taskId, { executorType: 'local', command: ['sleep', '600'] });
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expectSafeError(refused.body, 'invalid_request', [repo, h.scratch]);
    expect(refused.body.error.reason).toBe('local_checkout_owned_by_root');
    // What it is, and both ways out: the checkout to its user, or the worktree executor.
    expect(refused.body.error.message).toMatch(/checkout is owned by root/);
    expect(refused.body.error.message).toMatch(/Give the checkout to the user who works in it/);
    expect(refused.body.error.message).toMatch(/worktree executor/);
    expect(git(repo, 'status', '--porcelain')).toBe('');
    // Done as it says: the checkout given to its user, the same launch runs (as that user).
    execFileSync('chown', ['-R', `${CHECKOUT_OWNER}:${CHECKOUT_OWNER}`, repo]);
    const again = await launch(h, taskId, { executorType: 'local', command: ['sh', '-c', 'id -u; sleep 600'] });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(await agentOutputUntil(h, again.body.executionId, String(CHECKOUT_OWNER))).toContain(String(CHECKOUT_OWNER));
  });

  it('TWS_LOCAL_EXECUTOR: by default only an operator runs a local agent in the source checkout; off refuses everyone; a refusal changes nothing', async () => {
    const h = await harness({ localExecutor: 'operator' });
    const repo = makeRepo(h.scratch, 'own');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'own')]);
    const refused = await launch(h, taskId, { executorType: 'local', command: ['sleep', '600'] });
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expectSafeError(refused.body, 'forbidden', [repo]);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM sessions WHERE task_id = $1', [taskId])).rows[0].n).toBe(
      0,
    );
    const byOperator = await h.api(
      'POST',
      `/v1/tasks/${taskId}/sessions`,
      { executorType: 'local', agentProfile: 'shell', command: ['sleep', '600'] },
      OPERATOR_TOKEN,
    );
    expect(byOperator.status, JSON.stringify(byOperator.body)).toBe(201);
    // A user token cannot resume it either; an operator can.
    expect(
      (await h.api('POST', `/v1/sessions/${byOperator.body.sessionId}/stop`, undefined, OPERATOR_TOKEN)).status,
    ).toBe(200);
    expect((await h.api('POST', `/v1/sessions/${byOperator.body.sessionId}/resume`, {})).status).toBe(403);
    expect((await h.api('POST', `/v1/sessions/${byOperator.body.sessionId}/resume`, {}, OPERATOR_TOKEN)).status).toBe(
      200,
    );
    // A worktree agent is anyone's.
    const other = await createTask(h, [await registerRepo(h, makeRepo(h.scratch, 'tree'), 'tree')]);
    expect((await launch(h, other, { command: ['sleep', '600'] })).status).toBe(201);

    const off = await harness({ localExecutor: 'off' });
    const offTask = await createTask(off, [await registerRepo(off, makeRepo(off.scratch, 'own'), 'own')]);
    const res = await off.api(
      'POST',
      `/v1/tasks/${offTask}/sessions`,
      { executorType: 'local', agentProfile: 'shell', command: ['sleep', '600'] },
      OPERATOR_TOKEN,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(403);
    expectSafeError(res.body, 'forbidden');
  });
});
