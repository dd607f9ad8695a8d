/**
 * Grows the database to a given number of tasks in bulk SQL, with rows like the product
 * writes: each task has 1–3 repositories, a materialized environment (ready; stopped when the
 * task is archived) with one active inventory row per repository, `sessionsPerTask` sessions
 * (three of mixed states, the rest stopped or exited attaches: the growth scenario asks for 1,000,000
 * sessions rows beside 100,000 tasks), and archived tasks have their finished cleanup job. No executions are seeded: their
 * pids would be made up, and agent processes are killed by pid.
 */
import type pg from 'pg';
import type { Repo } from './world';

export async function growTasksTo(
  pool: pg.Pool,
  total: number,
  repos: Repo[],
  workspaceRoot: string,
  sessionsPerTask = 3,
): Promise<number> {
  if (repos.length < 3) throw new Error('seeding needs three repositories');
  const current = Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM tasks')).rows[0]!.n);
  const missing = total - current;
  if (missing <= 0) return 0;
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(
      `CREATE TEMP TABLE seed ON COMMIT DROP AS
         SELECT g AS n, gen_random_uuid() AS task_id, gen_random_uuid() AS env_id,
                gen_random_uuid() AS s1, gen_random_uuid() AS s2, gen_random_uuid() AS s3,
                CASE WHEN g % 10 < 7 THEN 1 WHEN g % 10 < 9 THEN 2 ELSE 3 END AS repo_count,
                (g % 10 = 4) AS archived,
                now() - make_interval(mins => g) AS created
           FROM generate_series(1, $1::int) g`,
      [missing],
    );
    await client.query(
      `INSERT INTO tasks (id, title, workspace_mode, archived_at, last_activity_at, created_at)
       SELECT task_id, 'seeded task ' || n, 'new_workspace', CASE WHEN archived THEN created + interval '1 hour' END, created, created FROM seed`,
    );
    await client.query(
      `CREATE TEMP TABLE seed_slots ON COMMIT DROP AS
         SELECT s.n, s.task_id, s.env_id, p.pos, s.repo_count, ($1::uuid[])[p.pos + 1] AS repository_id, ($2::text[])[p.pos + 1] AS repository_name
           FROM seed s CROSS JOIN LATERAL generate_series(0, s.repo_count - 1) AS p(pos)`,
      [repos.slice(0, 3).map((r) => r.id), repos.slice(0, 3).map((r) => r.name)],
    );
    await client.query(
      `INSERT INTO task_repositories (task_id, repository_id, position, base_branch, checkout_branch, branch_slug)
       SELECT task_id, repository_id, pos, 'main', NULL, 'tws/' || task_id FROM seed_slots`,
    );
    await client.query(
      `INSERT INTO task_environments (id, task_id, executor_type, host_id, status, workspace_path, materializer_session_id, materialized, created_at, updated_at)
       SELECT s.env_id, s.task_id, 'worktree', 'bench', CASE WHEN s.archived THEN 'stopped' ELSE 'ready' END,
              CASE WHEN s.repo_count = 1 THEN $1 || '/task-' || s.task_id || '/' || $2 ELSE $1 || '/task-' || s.task_id END,
              s.s1, true, s.created, s.created
         FROM seed s`,
      [workspaceRoot, repos[0]!.name],
    );
    await client.query(
      `INSERT INTO environment_repos (id, environment_id, repository_id, branch_slug, executor_type, worktree_id, worktree_path, worktree_branch, head_commit, position, status)
       SELECT gen_random_uuid(), env_id, repository_id, 'tws/' || task_id, 'worktree', repository_name || n, $1 || '/task-' || task_id || '/' || repository_name,
              'tws/' || task_id, md5(task_id::text || pos) || substr(md5(repository_name || n), 1, 8), pos, 'active'
         FROM seed_slots`,
      [workspaceRoot],
    );
    await client.query(
      `INSERT INTO sessions (id, task_id, environment_id, state, executor_type, agent_profile, command, role, created_at, updated_at)
       SELECT v.id, s.task_id, s.env_id, v.state, 'worktree', 'shell', '["sleep","600"]'::jsonb, v.role, s.created, s.created
         FROM seed s CROSS JOIN LATERAL (VALUES
           (s.s1, 'exited', 'materialized'),
           (s.s2, CASE WHEN s.archived THEN 'stopped' ELSE 'exited' END, 'attached'),
           (s.s3, CASE WHEN s.archived THEN 'stopped' WHEN s.n % 3 = 0 THEN 'running' ELSE 'stopped' END, 'attached')) AS v(id, state, role)`,
    );
    if (sessionsPerTask > 3) {
      await client.query(
        `INSERT INTO sessions (id, task_id, environment_id, state, executor_type, agent_profile, command, role, created_at, updated_at)
         SELECT gen_random_uuid(), s.task_id, s.env_id, CASE WHEN k % 2 = 0 THEN 'stopped' ELSE 'exited' END, 'worktree', 'shell', '["sleep","600"]'::jsonb, 'attached',
                s.created + make_interval(secs => k), s.created + make_interval(secs => k)
           FROM seed s CROSS JOIN generate_series(4, $1::int) AS k`,
        [sessionsPerTask],
      );
    }
    await client.query(
      `INSERT INTO cleanup_jobs (operation_id, task_id, trigger, state, attempts, workflow_id, finished_at)
       SELECT gen_random_uuid(), task_id, 'archive', 'succeeded', 1, 'cleanup/archive/' || task_id || '/seeded', created + interval '1 hour'
         FROM seed WHERE archived`,
    );
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
  // A database of this size in production has statistics; without them the planner guesses.
  await pool.query('ANALYZE');
  return missing;
}
