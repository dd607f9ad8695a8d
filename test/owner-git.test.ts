/**
 * The repository is its owner's [R9.1]: a person's checkout (not root's) keeps working with the
 * person's own git while the service (as root) and its agents (as their uids) work on its tasks.
 * After launches, agents' commits, idle releases, restores, archives and deletes, the owner can
 * commit, gc, fetch, make and delete a branch and prune worktrees, and every folder the service or
 * an agent added under the repository's `.git` is one the owner can write.
 */
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { taskBranchName } from '../domain/task-layout';
import { archive, deleteTask, releaseIdleTask, waitForJob } from './support/cleanup';
import { harnessesPerTest, type Harness } from './support/harness';
import { agentOutputUntil, createTask, launch, registerRepo, waitUntil } from './support/scenario';
import { CHECKOUT_OWNER, git, makeRepo } from './support/world';

const { harness } = harnessesPerTest();

/** A program run as the repository's owner (the person's uid, no other group), in a clean environment of theirs. */
function runAsOwner(h: Harness, cwd: string, program: string, args: string[]) {
  const home = path.join(h.scratch, 'owner-home');
  mkdirSync(home, { recursive: true });
  chownSync(home, CHECKOUT_OWNER, CHECKOUT_OWNER);
  return spawnSync(
    'setpriv',
    [`--reuid=${CHECKOUT_OWNER}`, `--regid=${CHECKOUT_OWNER}`, '--clear-groups', '--', program, ...args],
    { cwd, encoding: 'utf8', env: { PATH: '/usr/bin:/bin', HOME: home, GIT_CONFIG_NOSYSTEM: '1' } },
  );
}

/** The owner's git in their checkout: no config but a name. */
function asOwner(h: Harness, repo: string, ...args: string[]) {
  const res = runAsOwner(h, repo, 'git', ['-c', 'user.name=Owner', '-c', 'user.email=owner@example.com', ...args]);
  return { code: res.status, out: `${res.stdout}${res.stderr}` };
}

/**
 * What under the common git dir the owner cannot write, asked as the owner (access(2), so that the
 * ACLs count as well as the modes): folders, where git makes, renames and removes, and reflogs,
 * which git appends to in place.
 */
function notWritableByOwner(h: Harness, gitDir: string): string[] {
  const res = runAsOwner(h, gitDir, 'find', [
    gitDir,
    '(',
    '-type',
    'd',
    '-o',
    '-path',
    `${gitDir}/logs/*`,
    '-type',
    'f',
    ')',
    '!',
    '-writable',
    '-print',
  ]);
  expect(res.status, res.stderr).toBe(0);
  return res.stdout
    .split('\n')
    .filter(Boolean)
    .map((p) => path.relative(gitDir, p));
}

let round = 0;
/** Everything the owner does with their own repository, each asserted to work. */
function expectOwnerGitWorks(h: Harness, repo: string, other: string, when: string): void {
  round++;
  const ok = (args: string[]) => {
    const res = asOwner(h, repo, ...args);
    expect(res.code, `${when}: git ${args.join(' ')}: ${res.out}`).toBe(0);
  };
  // Objects in every fan-out folder: one new object per folder would take 256 commits; the
  // folders' owners are asserted below, and a commit of many files writes into many of them.
  for (let i = 0; i < 64; i++) writeFileSync(path.join(repo, `owner-${round}-${i}.txt`), `${when} ${i}\n`);
  ok(['add', '-A', '.']);
  ok(['commit', '-q', '-m', `the owner works on (${when})`]);
  ok(['branch', `owner-scratch-${round}`]);
  ok(['branch', '-D', `owner-scratch-${round}`]);
  ok(['fetch', '-q', other, `main:refs/remotes/other/main-${round}`]);
  ok(['worktree', 'prune']);
  ok(['gc', '-q']);
  ok(['fsck', '--no-progress']);
}

describe("the owner's own git keeps working [R9.1]", () => {
  it('after launches, agent commits, releases, restores, archives and deletes', async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'owned');
    const other = makeRepo(h.scratch, 'other', { files: { 'other.txt': 'from elsewhere\n' } });
    const repositoryId = await registerRepo(h, repo, 'owned');
    const gitDir = path.join(repo, '.git');
    const expectAllOwners = (when: string) =>
      expect(notWritableByOwner(h, gitDir), `${when}: what under .git the owner cannot write`).toEqual([]);

    const taskId = await createTask(h, [repositoryId]);
    // The agent commits on its branch (objects into its task store, its ref and reflog), and leaves work uncommitted.
    const first = await launch(h, taskId, {
      command: [
        'sh',
        '-c',
        // Once: a resume runs the same command in the restored worktree, where the commit is.
        'if [ ! -e agent-1.txt ]; then for i in $(seq 1 40); do echo "agent $i" > "agent-$i.txt"; done && ' +
          'git add -A && git -c user.name=Agent -c user.email=agent@example.com commit -q -m "the agent commits"; fi && ' +
          'echo uncommitted > wip.txt && echo committed; sleep 600',
      ],
    });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    await agentOutputUntil(h, first.body.executionId, 'committed');
    // Its commit comes home as its branch moves, not a minute later with the periodic check.
    await waitUntil(
      async () =>
        spawnSync('git', ['rev-list', '--objects', taskBranchName(taskId)], { cwd: repo, stdio: 'ignore' }).status ===
        0,
      "the agent's commit in the repository's own store",
      10_000,
    );
    expectOwnerGitWorks(h, repo, other, 'while the agent runs');

    expect((await h.api('POST', `/v1/sessions/${first.body.sessionId}/stop`)).status).toBe(200);
    expectOwnerGitWorks(h, repo, other, 'after the agent stopped');
    expectAllOwners('after the agent stopped');

    // Released (its work saved on the saved ref), then restored by a resume.
    await releaseIdleTask(h, taskId);
    expectOwnerGitWorks(h, repo, other, 'after an idle release');
    expectAllOwners('after an idle release');
    const resumed = await h.api('POST', `/v1/sessions/${first.body.sessionId}/resume`, {
      args: [],
    });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expectOwnerGitWorks(h, repo, other, 'after a restore');
    expect((await h.api('POST', `/v1/sessions/${first.body.sessionId}/stop`)).status).toBe(200);

    // Archived (its dirty worktree kept), unarchived, deleted with consent (its work saved).
    await waitForJob(h, (await archive(h, taskId)).operationId);
    expectOwnerGitWorks(h, repo, other, 'after an archive');
    expect((await h.api('POST', `/v1/tasks/${taskId}/unarchive`)).status).toBe(200);
    const deleted = await deleteTask(h, taskId, 'discardChanges=true');
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
    await waitForJob(h, deleted.body.operationId);
    expectOwnerGitWorks(h, repo, other, 'after a delete');
    expectAllOwners('after a delete');
    // The owner can remove what the task left them (its kept branch, its saved work) with their own git.
    const left = git(repo, 'for-each-ref', '--format=%(refname)')
      .split('\n')
      .filter((r) => r.includes(taskId) || r.startsWith('refs/task-workspaces/'));
    for (const ref of left) {
      const res = asOwner(h, repo, 'update-ref', '-d', ref);
      expect(res.code, `${ref}: ${res.out}`).toBe(0);
    }
    expect(git(repo, 'branch', '--list', taskBranchName(taskId))).toBe('');
  });
});
