/**
 * Git status of a shared environment is one status [R1.5]: an observation replaces the stored
 * one only if it is newer AND was taken at the path the inventory records for that slot.
 */
import type { GitStatusObservation, GitStatusTarget } from '../domain/git-status';
import type { Db } from './pool';

export async function recordObservation(db: Db, environmentId: string, obs: GitStatusObservation): Promise<boolean> {
  const payload = { branch: obs.branch, head: obs.head, ahead: obs.ahead, behind: obs.behind, files: obs.files };
  const res = await db.query(
    `INSERT INTO git_status_observations (environment_id, repository_id, workspace_path, observed_at, payload, changed_at)
     SELECT $1, $2, $3, $4, $5, $4
      WHERE EXISTS (
        SELECT 1 FROM environment_repos er JOIN task_environments e ON e.id = er.environment_id
         WHERE er.environment_id = $1 AND er.repository_id = $2 AND er.status = 'active'
           AND COALESCE(er.worktree_path, e.workspace_path) = $3)
     ON CONFLICT (environment_id, repository_id) DO UPDATE
        SET workspace_path = EXCLUDED.workspace_path, observed_at = EXCLUDED.observed_at, payload = EXCLUDED.payload,
            changed_at = CASE WHEN git_status_observations.payload IS DISTINCT FROM EXCLUDED.payload
                                OR git_status_observations.workspace_path IS DISTINCT FROM EXCLUDED.workspace_path
                              THEN EXCLUDED.observed_at ELSE git_status_observations.changed_at END
      WHERE git_status_observations.observed_at < EXCLUDED.observed_at`,
    [environmentId, obs.repositoryId, obs.workspacePath, obs.observedAt, JSON.stringify(payload)],
  );
  return res.rowCount === 1;
}

export async function observationsOf(db: Db, environmentId: string): Promise<GitStatusObservation[]> {
  const res = await db.query<{
    repository_id: string;
    workspace_path: string;
    observed_at: Date;
    payload: Omit<GitStatusObservation, 'repositoryId' | 'workspacePath' | 'observedAt'>;
  }>(
    `SELECT o.repository_id, o.workspace_path, o.observed_at, o.payload FROM git_status_observations o
       JOIN environment_repos er ON er.environment_id = o.environment_id AND er.repository_id = o.repository_id AND er.status = 'active'
      WHERE o.environment_id = $1 ORDER BY er.position`,
    [environmentId],
  );
  return res.rows.map((r) => ({
    repositoryId: r.repository_id,
    workspacePath: r.workspace_path,
    observedAt: r.observed_at.toISOString(),
    ...r.payload,
  }));
}

/** Where to look: the canonical workspace of each active slot, never the source checkout of a worktree slot. */
export async function statusTarget(db: Db, environmentId: string): Promise<GitStatusTarget | null> {
  const res = await db.query<{
    host_id: string;
    ssh_target_id: string | null;
    repository_id: string;
    path: string;
    base_branch: string | null;
  }>(
    `SELECT e.host_id, e.ssh_target_id, er.repository_id, COALESCE(er.worktree_path, e.workspace_path) AS path,
            (SELECT tr.base_branch FROM task_repositories tr WHERE tr.task_id = e.task_id AND tr.repository_id = er.repository_id) AS base_branch
       FROM task_environments e JOIN environment_repos er ON er.environment_id = e.id AND er.status = 'active'
      WHERE e.id = $1 AND e.status IN ('ready', 'stopped') ORDER BY er.position`,
    [environmentId],
  );
  if (res.rows.length === 0) return null;
  return {
    environmentId,
    hostId: res.rows[0]!.host_id,
    sshTargetId: res.rows[0]!.ssh_target_id,
    slots: res.rows.map((r) => ({ repositoryId: r.repository_id, path: r.path, baseBranch: r.base_branch ?? 'HEAD' })),
  };
}
