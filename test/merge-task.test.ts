/** Merging a task into its base: each strategy, conflicts, a checked-out base, consent, undo and rebase [R8.2-R8.5]. */
import { existsSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, OPERATOR_TOKEN, type Harness } from './support/harness';
import { commitIn, finish, mergedTree, read, reflogLength, taskWithCommits, treeOf } from './support/finishing';
import { expectSafeError, launch, pidOf, SLEEPER, waitUntil } from './support/scenario';
import { branches, CHECKOUT_OWNER, commitOf, fingerprint, git } from './support/world';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

describe('merging a task [R8.3]', () => {
  for (const strategy of ['squash', 'merge', 'fast_forward', 'rebase'] as const) {
    it(`${strategy}: the base holds what git merge makes, its checkout follows with an unrelated dirty file kept`, async () => {
      const w = await taskWithCommits(h, `strategy-${strategy}`, [{ 'a.txt': 'a\n' }, { 'b.txt': 'b\n' }], {
        files: { 'README.md': 'readme\n', 'notes.txt': 'mine\n' },
      });
      if (strategy !== 'fast_forward') commitIn(w.repo, { 'other.txt': 'landed on main\n' }, 'meanwhile');
      git(w.repo, 'config', 'user.name', 'owner'); // the owner's own setting: never the merge's identity
      writeFileSync(path.join(w.repo, 'notes.txt'), 'uncommitted, unrelated\n');
      const before = commitOf(w.repo, 'main');
      const taskHead = commitOf(w.repo, w.branch);
      const expectedTree = mergedTree(w.repo, w.branch);

      const preview = await finish(h, 'GET', `/v1/tasks/${w.taskId}/merge-preview?strategy=${strategy}`);
      expect(preview.status, JSON.stringify(preview.body)).toBe(200);
      expect(preview.body.repositories).toEqual([{ repositoryId: w.repoId, outcome: 'clean' }]);

      const res = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy, message: 'Add a and b' });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ state: 'merged', strategy, taskId: w.taskId });
      const after = commitOf(w.repo, 'main');
      expect(res.body.repositories).toEqual([{ repositoryId: w.repoId, baseBranch: 'main', before, after }]);
      expect(treeOf(w.repo, 'main')).toBe(expectedTree);
      expect(commitOf(w.repo, w.branch)).toBe(taskHead); // the task branch is kept
      expect(git(w.repo, 'merge-base', '--is-ancestor', before, 'main')).toBe('');
      // The checkout moved with its branch: its files are the base's, its unrelated dirty file kept.
      expect(read(w.repo, 'a.txt')).toBe('a\n');
      expect(read(w.repo, 'b.txt')).toBe('b\n');
      expect(read(w.repo, 'notes.txt')).toBe('uncommitted, unrelated\n');
      expect(git(w.repo, 'status', '--porcelain')).toBe('M notes.txt');
      expect(statSync(path.join(w.repo, 'a.txt')).uid).toBe(CHECKOUT_OWNER); // written as the checkout's owner
      expect(reflogLength(w.repo, 'main')).toBe(strategy === 'fast_forward' ? 2 : 3);
      if (strategy === 'squash' || strategy === 'merge') {
        expect(git(w.repo, 'log', '-1', '--format=%an|%cn|%B', 'main')).toBe(
          `task-workspaces|task-workspaces|Add a and b\n\nTask-Id: ${w.taskId}`,
        );
        expect(git(w.repo, 'rev-list', '--parents', '-1', 'main').split(' ')).toHaveLength(
          strategy === 'merge' ? 3 : 2,
        );
      }
      if (strategy === 'rebase') expect(git(w.repo, 'log', '-1', '--format=%an|%cn', 'main')).toBe('t|task-workspaces');
      if (strategy === 'fast_forward') expect(after).toBe(taskHead);
      const task = await h.api('GET', `/v1/tasks/${w.taskId}`);
      expect(task.body.merged).toMatchObject({ operationId: res.body.operationId });
      const merged = await h.api('GET', '/v1/tasks?state=merged');
      expect(merged.body.items.map((t: any) => t.id)).toContain(w.taskId);

      // A second merge takes only what is new.
      const again = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy });
      expect(again.status).toBe(409);
      expectSafeError(again.body, 'nothing_to_merge', [w.repo]);
      commitIn(w.worktree, { 'c.txt': 'c\n' });
      const second = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy });
      expect(second.status, JSON.stringify(second.body)).toBe(200);
      expect(read(w.repo, 'c.txt')).toBe('c\n');
      expect(git(w.repo, 'ls-tree', '--name-only', 'main').split('\n').sort()).toEqual(
        [
          'README.md',
          'a.txt',
          'b.txt',
          'c.txt',
          'notes.txt',
          ...(strategy === 'fast_forward' ? [] : ['other.txt']),
        ].sort(),
      );
    });
  }

  it('an overlapping dirty file in the checkout of the base refuses, and nothing moves', async () => {
    const w = await taskWithCommits(h, 'overlap', [{ 'README.md': 'changed by the task\n' }]);
    writeFileSync(path.join(w.repo, 'README.md'), "the owner's edit\n");
    const before = commitOf(w.repo, 'main');
    const preview = await finish(h, 'GET', `/v1/tasks/${w.taskId}/merge-preview?strategy=merge`);
    expect(preview.body.repositories[0]).toEqual({
      repositoryId: w.repoId,
      outcome: 'blocked',
      blockedBy: 'base_checkout_dirty',
    });
    const res = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'merge' });
    expect(res.status).toBe(409);
    expectSafeError(res.body, 'base_checkout_dirty', [w.repo]);
    expect(commitOf(w.repo, 'main')).toBe(before);
    expect(read(w.repo, 'README.md')).toBe("the owner's edit\n");
  });

  it('a conflict is refused with its files; no ref, worktree, index or checkout changes', async () => {
    const w = await taskWithCommits(h, 'conflict', [{ 'README.md': 'the task says\n' }]);
    commitIn(w.repo, { 'README.md': 'main says\n' }, 'main moved');
    const refs = git(w.repo, 'for-each-ref');
    const checkout = fingerprint(w.repo, ['.git']);
    const worktree = fingerprint(w.worktree);
    const preview = await finish(h, 'GET', `/v1/tasks/${w.taskId}/merge-preview?strategy=squash`);
    expect(preview.body.repositories[0]).toEqual({
      repositoryId: w.repoId,
      outcome: 'conflicts',
      conflicts: ['README.md'],
    });
    const res = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'squash' });
    expect(res.status).toBe(409);
    expectSafeError(res.body, 'merge_conflict', [w.repo]);
    expect(res.body.error.conflicts).toEqual([{ repositoryId: w.repoId, paths: ['README.md'] }]);
    expect(git(w.repo, 'for-each-ref')).toBe(refs);
    expect(fingerprint(w.repo, ['.git'])).toBe(checkout);
    expect(fingerprint(w.worktree)).toBe(worktree);
    const ff = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'fast_forward' });
    expect(ff.status).toBe(409);
    expect(ff.body.error.code).toBe('not_fast_forward');
  });

  it('a running agent refuses unless stopped; uncommitted work refuses unless committed', async () => {
    const w = await taskWithCommits(h, 'consent', [{ 'a.txt': 'a\n' }]);
    const running = await launch(h, w.taskId, { command: SLEEPER });
    const pid = await pidOf(h, running.body.sessionId);
    const refused = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'squash' });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('session_running');
    writeFileSync(path.join(w.worktree, 'draft.txt'), 'not committed\n');
    const stopped = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'squash', stopAgents: true });
    expect(stopped.status).toBe(409);
    expect(stopped.body.error).toMatchObject({ code: 'task_uncommitted_changes', repositoryIds: [w.repoId] });
    expect(existsSync(`/proc/${pid}`)).toBe(false);
    const res = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'squash', commitUncommitted: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(read(w.repo, 'draft.txt')).toBe('not committed\n');
    expect(git(w.worktree, 'status', '--porcelain')).toBe('');
    expect(read(w.worktree, 'draft.txt')).toBe('not committed\n');
  });

  it('undo moves the base back where nothing landed since, and refuses after another commit [R8.5]', async () => {
    const w = await taskWithCommits(h, 'undo', [{ 'a.txt': 'a\n' }]);
    const before = commitOf(w.repo, 'main');
    const merged = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'merge' });
    expect(merged.status).toBe(200);
    const undone = await finish(h, 'POST', `/v1/merges/${merged.body.operationId}/undo`);
    expect(undone.status, JSON.stringify(undone.body)).toBe(200);
    expect(undone.body.state).toBe('undone');
    expect(commitOf(w.repo, 'main')).toBe(before);
    expect(existsSync(path.join(w.repo, 'a.txt'))).toBe(false);
    expect((await h.api('GET', `/v1/tasks/${w.taskId}`)).body.merged).toBeNull();

    const again = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'merge' });
    expect(again.status).toBe(200);
    commitIn(w.repo, { 'later.txt': 'landed after\n' }, 'after the merge');
    const moved = commitOf(w.repo, 'main');
    const refused = await finish(h, 'POST', `/v1/merges/${again.body.operationId}/undo`);
    expect(refused.status).toBe(409);
    expectSafeError(refused.body, 'base_moved_since_merge', [w.repo]);
    expect(commitOf(w.repo, 'main')).toBe(moved);
  });

  it('rebase replays the task on its base; a conflict leaves the worktree byte-for-byte as it was [R8.4]', async () => {
    const w = await taskWithCommits(h, 'rebase', [{ 'a.txt': 'a\n' }]);
    commitIn(w.repo, { 'other.txt': 'o\n' }, 'main moved');
    const res = await finish(h, 'POST', `/v1/tasks/${w.taskId}/rebase`, {});
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const after = commitOf(w.repo, w.branch);
    expect(res.body.repositories[0]).toMatchObject({ repositoryId: w.repoId, after });
    expect(git(w.repo, 'rev-parse', `${w.branch}~1`)).toBe(commitOf(w.repo, 'main'));
    expect(read(w.worktree, 'other.txt')).toBe('o\n');
    expect(git(w.worktree, 'status', '--porcelain')).toBe('');

    commitIn(w.worktree, { 'README.md': 'task\n' });
    commitIn(w.repo, { 'README.md': 'main\n' }, 'conflicting');
    const head = commitOf(w.repo, w.branch);
    const worktree = fingerprint(w.worktree);
    const conflict = await finish(h, 'POST', `/v1/tasks/${w.taskId}/rebase`, {});
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.conflicts).toEqual([{ repositoryId: w.repoId, paths: ['README.md'] }]);
    expect(commitOf(w.repo, w.branch)).toBe(head);
    expect(fingerprint(w.worktree)).toBe(worktree);
  });

  it('push: true sends the moved base to the remote; archive: true archives the task in the same operation', async () => {
    const w = await taskWithCommits(h, 'push-archive', [{ 'a.txt': 'a\n' }]);
    const bare = path.join(h.scratch, 'push-archive-remote.git');
    git(h.scratch, 'init', '-q', '--bare', bare);
    const set = await h.api('PATCH', `/v1/repositories/${w.repoId}`, { remote: `file://${bare}` }, OPERATOR_TOKEN);
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    const res = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, {
      strategy: 'squash',
      push: true,
      archive: true,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.repositories[0]).toMatchObject({ pushed: true });
    expect(git(bare, 'rev-parse', 'refs/heads/main')).toBe(commitOf(w.repo, 'main'));
    await waitUntil(async () => (await h.api('GET', `/v1/tasks/${w.taskId}`)).body.state === 'archived', 'the archive');
    expect(branches(w.repo)).toContain(w.branch); // an archive keeps the branch (a later delete removes it, merged)
  });

  it('the same Idempotency-Key sent twice at once is one merge, the base moved once', async () => {
    const w = await taskWithCommits(h, 'idempotent', [{ 'a.txt': 'a\n' }]);
    const reflog = reflogLength(w.repo, 'main');
    const [a, b] = await Promise.all(
      [1, 2].map(() =>
        finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'merge' }, { 'idempotency-key': 'k-1' }),
      ),
    );
    expect([a!.status, b!.status].sort()).toEqual([200, 200]);
    expect(a!.body.operationId).toBe(b!.body.operationId);
    expect(reflogLength(w.repo, 'main')).toBe(reflog + 1);
    const list = await h.api('GET', `/v1/tasks/${w.taskId}/merges`);
    expect(list.body.items).toHaveLength(1);
  });

  // Last in the file: an idle release takes every idle task of the host.
  it('a released task merges from its kept branch; its saved work counts as uncommitted', async () => {
    const w = await taskWithCommits(h, 'released', [{ 'a.txt': 'a\n' }]);
    writeFileSync(path.join(w.worktree, 'draft.txt'), 'saved by the release\n');
    const res = await h.api('POST', '/v1/idle-release', { hostId: h.config.hostId, idleForMs: 1 }, OPERATOR_TOKEN);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await waitUntil(async () => !existsSync(w.worktree), 'the release removed the worktree');
    await waitUntil(
      async () =>
        (await h.pool.query(`SELECT 1 FROM task_environments WHERE task_id = $1 AND status = 'released'`, [w.taskId]))
          .rowCount === 1,
      'the release recorded',
    );
    const refused = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'squash' });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'task_uncommitted_changes', repositoryIds: [w.repoId] });
    await h.pool.query(`UPDATE saved_work SET restore = 'abandoned' WHERE task_id = $1`, [w.taskId]);
    const merged = await finish(h, 'POST', `/v1/tasks/${w.taskId}/merge`, { strategy: 'squash' });
    expect(merged.status, JSON.stringify(merged.body)).toBe(200);
    expect(read(w.repo, 'a.txt')).toBe('a\n');
  });
});
