/**
 * Many workspaces on the host at little cost, for the disk measurement scenario: real worktrees
 * made with plain `git worktree add` in the product's layout (`<root>/task-<id>/<repository>`),
 * and rows as a materialized single-repository environment of the product has them (a task, its
 * repository slot, a ready environment with one active inventory row, the stopped session that
 * made it). The measurement finds workspaces by these rows (db/disk.ts workspacesToMeasure) and
 * walks their folders with `du`, so it cannot tell them from launched ones.
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import type { Api } from './api';
import { gitAsync, makeRepo, type Repo } from './world';

export interface SeededWorkspaces {
  count: number;
  repos: Repo[];
  seconds: number;
  /** Removes the rows (cascading) and the folders, and prunes the repositories' registrations. */
  remove(): Promise<void>;
}

export async function seedWorkspaces(opts: {
  pool: pg.Pool;
  api: Api;
  reposDir: string;
  workspaceRoot: string;
  count: number;
  repositories: number;
  repoFiles: number;
}): Promise<SeededWorkspaces> {
  const start = performance.now();
  const repos: Repo[] = [];
  for (let r = 0; r < opts.repositories; r++)
    repos.push(await makeRepo(opts.api, opts.reposDir, `disk-${r + 1}`, opts.repoFiles));
  const slots = Array.from({ length: opts.count }, (_, i) => {
    const repo = repos[i % repos.length]!;
    const taskId = randomUUID();
    return {
      taskId,
      envId: randomUUID(),
      sessionId: randomUUID(),
      repo,
      branch: `tws/${taskId}`,
      worktreePath: path.join(opts.workspaceRoot, `task-${taskId}`, repo.name),
    };
  });
  // Per repository in order (git's admin files), repositories side by side.
  await Promise.all(
    repos.map(async (repo) => {
      for (const s of slots.filter((x) => x.repo === repo))
        await gitAsync(repo.path, 'worktree', 'add', '-q', '--no-track', '-b', s.branch, s.worktreePath, 'main');
    }),
  );
  const col = <K extends keyof (typeof slots)[number]>(k: K) => slots.map((s) => s[k]);
  const client = await opts.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(
      `INSERT INTO tasks (id, title, workspace_mode) SELECT id, 'disk bench workspace', 'new_workspace' FROM unnest($1::uuid[]) AS t(id)`,
      [col('taskId')],
    );
    await client.query(
      `INSERT INTO task_repositories (task_id, repository_id, position, base_branch, checkout_branch, branch_slug)
       SELECT t, r, 0, 'main', NULL, b FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS x(t, r, b)`,
      [col('taskId'), slots.map((s) => s.repo.id), col('branch')],
    );
    await client.query(
      `INSERT INTO task_environments (id, task_id, executor_type, host_id, status, workspace_path, materializer_session_id, materialized)
       SELECT e, t, 'worktree', 'bench', 'ready', p, s, true FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::uuid[]) AS x(e, t, p, s)`,
      [col('envId'), col('taskId'), col('worktreePath'), col('sessionId')],
    );
    await client.query(
      `INSERT INTO environment_repos (id, environment_id, repository_id, branch_slug, executor_type, worktree_id, worktree_path, worktree_branch, head_commit, position, status)
       SELECT gen_random_uuid(), e, r, b, 'worktree', 'disk' || ord, p, b, h, 0, 'active'
         FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS x(e, r, b, p, h, ord)`,
      [col('envId'), slots.map((s) => s.repo.id), col('branch'), col('worktreePath'), slots.map((s) => s.repo.head)],
    );
    await client.query(
      `INSERT INTO sessions (id, task_id, environment_id, state, executor_type, agent_profile, command, role)
       SELECT s, t, e, 'stopped', 'worktree', 'shell', '["sleep","600"]'::jsonb, 'materialized'
         FROM unnest($1::uuid[], $2::uuid[], $3::uuid[]) AS x(s, t, e)`,
      [col('sessionId'), col('taskId'), col('envId')],
    );
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
  await opts.pool.query('ANALYZE');
  return {
    count: slots.length,
    repos,
    seconds: Math.round(performance.now() - start) / 1000,
    async remove() {
      await opts.pool.query('DELETE FROM tasks WHERE id = ANY($1::uuid[])', [col('taskId')]);
      for (const s of slots) await rm(path.dirname(s.worktreePath), { recursive: true, force: true });
      for (const repo of repos) await gitAsync(repo.path, 'worktree', 'prune');
    },
  };
}
