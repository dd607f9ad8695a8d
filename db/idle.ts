/**
 * The facts idle release judges (domain/idle.ts): every environment of a host that has
 * something to release (a worktree or a clone recorded active), whose owner is not archived and
 * has no cleanup job active, with what the tasks using it and its workspace last did.
 */
import type { IdleFacts } from '../domain/idle';
import type { Db } from './pool';

/**
 * A host's candidates (`hostId`), or one task's own environment (`ownerTaskId`: the preparation's
 * second look): at most `limit`, those that may be released first (oldest first), then the pinned
 * and busy ones (reported as kept), so a host with many pinned tasks still releases the rest.
 */
export async function idleCandidates(
  db: Db,
  of: { hostId: string } | { ownerTaskId: string },
  limit = 500,
): Promise<IdleFacts[]> {
  const res = await db.query<{
    environment_id: string;
    owner_task_id: string;
    pinned: boolean;
    busy_owner: boolean;
    busy_other: boolean;
    last_activity_at: Date;
    live_agent: boolean;
  }>(
    `WITH env AS (
       SELECT e.id, e.task_id FROM task_environments e JOIN tasks o ON o.id = e.task_id
        WHERE ${'hostId' in of ? 'e.host_id = $1' : 'e.task_id = $1'} AND e.status IN ('ready', 'stopped') AND o.archived_at IS NULL
          AND EXISTS (SELECT 1 FROM environment_repos er WHERE er.environment_id = e.id AND er.status = 'active'
                        AND er.worktree_path IS NOT NULL AND (er.worktree_id IS NOT NULL OR er.ssh_target_id IS NOT NULL))
          AND NOT EXISTS (SELECT 1 FROM cleanup_jobs j WHERE j.task_id = e.task_id AND j.state NOT IN ('succeeded', 'cancelled'))
     ), users AS (
       -- Each environment's users, found from it by index, one way at a time: its owner, the
       -- tasks inheriting it, its group's tasks, any task with a session on it. (Joining every
       -- task against these four as one OR read all of tasks once per environment: with 100,000
       -- tasks a run, and every release's second look, took minutes.)
       SELECT env.id AS environment_id, env.task_id AS owner_task_id, u.id AS task_id, u.pinned_at, u.last_activity_at
         FROM env
         JOIN LATERAL (
                SELECT env.task_id AS id
          UNION SELECT t.id FROM tasks t WHERE t.parent_task_id = env.task_id AND t.workspace_mode = 'inherit_parent'
          UNION SELECT t.id FROM workspace_groups g JOIN tasks t ON t.group_id = g.id WHERE g.environment_id = env.id
          UNION SELECT s.task_id FROM sessions s WHERE s.environment_id = env.id
              ) ids ON true
         JOIN tasks u ON u.id = ids.id AND u.archived_at IS NULL
     )
     SELECT * FROM (
     SELECT u.environment_id, u.owner_task_id,
            bool_or(u.pinned_at IS NOT NULL) AS pinned,
            bool_or(u.task_id = u.owner_task_id AND EXISTS (
              SELECT 1 FROM sessions s WHERE s.task_id = u.task_id AND s.state IN ('starting', 'running'))) AS busy_owner,
            bool_or(u.task_id <> u.owner_task_id AND EXISTS (
              SELECT 1 FROM sessions s WHERE s.task_id = u.task_id AND s.state IN ('starting', 'running'))) AS busy_other,
            GREATEST(
              max(u.last_activity_at),
              (SELECT max(GREATEST(x.started_at, COALESCE(x.ended_at, x.started_at)))
                 FROM executions x JOIN sessions s ON s.id = x.session_id WHERE s.environment_id = u.environment_id),
              (SELECT max(o.changed_at) FROM git_status_observations o WHERE o.environment_id = u.environment_id)
            ) AS last_activity_at,
            bool_or(EXISTS (SELECT 1 FROM executions x JOIN sessions s ON s.id = x.session_id
                             WHERE s.environment_id = u.environment_id AND x.status = 'running')) AS live_agent
       FROM users u
      GROUP BY u.environment_id, u.owner_task_id
     ) c
      -- What may be released first, oldest first: pinned or busy ones never fill the limit ahead of them.
      ORDER BY (c.pinned OR c.busy_owner OR c.busy_other OR c.live_agent), c.last_activity_at
      LIMIT $2`,
    // One statement per form, each with its own index (task_id's unique one for a second look):
    // a NULL-or-value parameter in one statement kept its generic plan off both.
    ['hostId' in of ? of.hostId : of.ownerTaskId, limit],
  );
  return res.rows.map((r) => ({
    environmentId: r.environment_id,
    ownerTaskId: r.owner_task_id,
    pinned: r.pinned,
    busy: r.busy_owner || r.busy_other || r.live_agent,
    busyElsewhere: r.busy_other && !r.busy_owner,
    lastActivityAt: r.last_activity_at.toISOString(),
  }));
}
