/** Attach is read-only validation; stale workspaces are refused before any process starts [R1.1, R1.2, R4]. */
import { randomUUID } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertInventoryRow } from '../db/inventory';
import { OWNERSHIP_MARKER_FILE, taskDirName } from '../domain/task-layout';
import { createHarness, type Harness } from './support/harness';
import { createTask, expectLaunchRefused, launch, pidOf, registerRepo } from './support/scenario';
import { branches, fingerprint, git, makeRepo, processCwd, worktreePaths } from './support/world';

let h: Harness;
let n = 0;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

/** A task whose first session materialized its worktree. */
async function materializedTask(files: Record<string, string> = { 'README.md': 'hello\n', 'src/app.txt': 'v1\n' }) {
  const name = `attach-${++n}`;
  const repo = makeRepo(h.scratch, name, { files, branches: ['other'] });
  const repoId = await registerRepo(h, repo, name);
  const taskId = await createTask(h, [repoId]);
  const first = await launch(h, taskId);
  expect(first.status, JSON.stringify(first.body)).toBe(201);
  await pidOf(h, first.body.sessionId);
  const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), name);
  return { repo, repoId, taskId, first: first.body, worktree, folder: path.dirname(worktree) };
}

describe('attach [R1.2]', () => {
  it('attach leaves the worktree byte-for-byte unchanged, uncommitted edits of the first session included', async () => {
    const { repo, taskId, worktree, first } = await materializedTask();
    // The first session's work in progress: a modified tracked file, a staged file, an untracked file.
    writeFileSync(path.join(worktree, 'README.md'), 'hello, edited but not committed\n');
    writeFileSync(path.join(worktree, 'staged.txt'), 'staged\n');
    git(worktree, 'add', 'staged.txt');
    mkdirSync(path.join(worktree, 'notes'));
    writeFileSync(path.join(worktree, 'notes/untracked.md'), 'scratch\n');
    const before = {
      worktree: fingerprint(worktree),
      repo: fingerprint(repo),
      head: git(worktree, 'rev-parse', 'HEAD'),
      status: git(worktree, 'status', '--porcelain=v1', '--untracked-files=all'),
      branches: branches(repo),
      list: git(repo, 'worktree', 'list', '--porcelain'),
    };

    const second = await launch(h, taskId);
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    expect(second.body).toMatchObject({ role: 'attached', taskEnvironmentId: first.taskEnvironmentId });
    const pid = await pidOf(h, second.body.sessionId);
    expect(processCwd(pid)).toBe(worktree);

    expect(fingerprint(worktree)).toBe(before.worktree);
    expect(fingerprint(repo)).toBe(before.repo);
    expect(git(worktree, 'rev-parse', 'HEAD')).toBe(before.head);
    expect(git(worktree, 'status', '--porcelain=v1', '--untracked-files=all')).toBe(before.status);
    expect(branches(repo)).toEqual(before.branches);
    expect(git(repo, 'worktree', 'list', '--porcelain')).toBe(before.list);
  });
});

describe('stale workspaces are refused before any process starts, touching nothing [R1.1, R1.2]', () => {
  it('folder deleted', async () => {
    const t = await materializedTask();
    rmSync(t.worktree, { recursive: true, force: true });
    await expectLaunchRefused(h, t.taskId, 'workspace_reuse_unsafe', { watch: [t.folder, t.repo] });
  });

  it('folder replaced by a plain directory', async () => {
    const t = await materializedTask();
    rmSync(t.worktree, { recursive: true, force: true });
    mkdirSync(t.worktree);
    writeFileSync(path.join(t.worktree, 'impostor.txt'), 'not a worktree\n');
    await expectLaunchRefused(h, t.taskId, 'workspace_reuse_unsafe', { watch: [t.folder, t.repo] });
  });

  it('folder replaced by a symlink', async () => {
    const t = await materializedTask();
    const moved = path.join(h.scratch, `moved-${randomUUID()}`);
    renameSync(t.worktree, moved);
    symlinkSync(moved, t.worktree);
    await expectLaunchRefused(h, t.taskId, 'workspace_reuse_unsafe', { watch: [t.folder, t.repo, moved] });
  });

  it('worktree checked out to another branch', async () => {
    const t = await materializedTask();
    git(t.worktree, 'checkout', '-q', 'other');
    await expectLaunchRefused(h, t.taskId, 'workspace_reuse_unsafe', { watch: [t.folder, t.repo] });
  });

  it('registration pruned', async () => {
    const t = await materializedTask();
    const id = (await h.pool.query('SELECT worktree_id FROM environment_repos WHERE repository_id = $1', [t.repoId]))
      .rows[0].worktree_id;
    rmSync(path.join(t.repo, '.git/worktrees', id), { recursive: true, force: true });
    expect(worktreePaths(t.repo)).toEqual([t.repo]);
    await expectLaunchRefused(h, t.taskId, 'workspace_reuse_unsafe', { watch: [t.folder, t.repo] });
  });

  it('marker naming another task', async () => {
    const t = await materializedTask();
    writeFileSync(
      path.join(t.folder, OWNERSHIP_MARKER_FILE),
      JSON.stringify({ kind: 'task-workspaces/ownership', taskId: randomUUID(), environmentId: randomUUID() }),
    );
    await expectLaunchRefused(h, t.taskId, 'workspace_reuse_unsafe', { watch: [t.folder, t.repo] });
  });

  it('inventory incomplete: a slot without its active row', async () => {
    const t = await materializedTask();
    await h.pool.query("UPDATE environment_repos SET status = 'deleted' WHERE repository_id = $1", [t.repoId]);
    await expectLaunchRefused(h, t.taskId, 'workspace_reuse_unsafe', { watch: [t.folder, t.repo] });
  });

  it('inventory row without its worktree identity fails closed [R4.3]', async () => {
    const t = await materializedTask();
    await h.pool.query(
      'UPDATE environment_repos SET worktree_id = NULL, worktree_path = NULL, worktree_branch = NULL WHERE repository_id = $1',
      [t.repoId],
    );
    await expectLaunchRefused(h, t.taskId, 'workspace_reuse_unsafe', { watch: [t.folder, t.repo] });
  });

  it('the database refuses a second active row for one slot (duplicates are impossible) [R1.1]', async () => {
    const t = await materializedTask();
    const row = (await h.pool.query('SELECT * FROM environment_repos WHERE repository_id = $1', [t.repoId])).rows[0];
    await expect(
      h.pool.query(
        'INSERT INTO environment_repos (id, environment_id, repository_id, branch_slug, executor_type, position) VALUES ($1, $2, $3, $4, $5, 0)',
        [randomUUID(), row.environment_id, row.repository_id, row.branch_slug, 'worktree'],
      ),
    ).rejects.toMatchObject({ code: '23505' });
  });
});

describe('the local executor runs in the source checkout', () => {
  it('materializes inventory-only rows, attaches after the toplevel and common-dir check, and refuses a replaced checkout', async () => {
    const repo = makeRepo(h.scratch, 'local-1');
    const repoId = await registerRepo(h, repo, 'local-1');
    const taskId = await createTask(h, [repoId]);
    const first = await launch(h, taskId, { executorType: 'local' });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.role).toBe('materialized');
    const p1 = await pidOf(h, first.body.sessionId);
    expect(processCwd(p1)).toBe(repo);
    expect(worktreePaths(repo)).toEqual([repo]);
    const rows = (
      await h.pool.query(
        'SELECT worktree_id, worktree_path, worktree_branch, status FROM environment_repos WHERE repository_id = $1',
        [repoId],
      )
    ).rows;
    expect(rows).toEqual([{ worktree_id: null, worktree_path: null, worktree_branch: null, status: 'active' }]);
    const ws = await h.api('GET', `/v1/sessions/${first.body.sessionId}/workspace`);
    expect(ws.body).toMatchObject({ executorType: 'local', workspacePath: repo, source: 'environment' });

    const second = await launch(h, taskId, { executorType: 'local' });
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    expect(second.body.role).toBe('attached');
    await pidOf(h, second.body.sessionId);

    // The checkout is replaced by a plain folder: no git top level there, so the launch is refused.
    const aside = path.join(h.scratch, `aside-${randomUUID()}`);
    renameSync(repo, aside);
    mkdirSync(repo);
    writeFileSync(path.join(repo, 'plain.txt'), 'not the repository\n');
    await expectLaunchRefused(h, taskId, 'workspace_reuse_unsafe', {
      body: { executorType: 'local' },
      watch: [repo, aside],
    });
    rmSync(repo, { recursive: true });
    renameSync(aside, repo);
  });
});

describe('inventory merge rule in the database [R4]', () => {
  it('an inventory-only refresh never clears a worktree identity; a concrete refresh replaces all three', async () => {
    const t = await materializedTask();
    const row = (await h.pool.query('SELECT * FROM environment_repos WHERE repository_id = $1', [t.repoId])).rows[0];
    const base = {
      id: randomUUID(),
      repositoryId: t.repoId,
      branchSlug: row.branch_slug,
      executorType: 'worktree' as const,
      headCommit: null,
      position: 0,
    };

    await upsertInventoryRow(h.pool, row.environment_id, { ...base, identity: null, error: 'observed_stale' });
    let now = (await h.pool.query('SELECT * FROM environment_repos WHERE id = $1', [row.id])).rows[0];
    expect([now.worktree_id, now.worktree_path, now.worktree_branch, now.error]).toEqual([
      row.worktree_id,
      row.worktree_path,
      row.worktree_branch,
      'observed_stale',
    ]);

    await upsertInventoryRow(h.pool, row.environment_id, {
      ...base,
      identity: { worktreeId: 'wt-new', worktreePath: '/elsewhere/wt', worktreeBranch: 'moved' },
      error: null,
    });
    now = (await h.pool.query('SELECT * FROM environment_repos WHERE id = $1', [row.id])).rows[0];
    expect([now.worktree_id, now.worktree_path, now.worktree_branch, now.error]).toEqual([
      'wt-new',
      '/elsewhere/wt',
      'moved',
      null,
    ]);
    expect(
      (
        await h.pool.query(
          "SELECT count(*)::int AS n FROM environment_repos WHERE environment_id = $1 AND status = 'active'",
          [row.environment_id],
        )
      ).rows[0].n,
    ).toBe(1);
  });
});
