/**
 * What a launch that made a workspace did to make it ready (domain/workspace-setup.ts), per
 * repository: the repositories' settings it read, and its record of what it copied, skipped and
 * how its setup ended (the launch answer and the session and task views read it).
 */
import type { CopyOutcome, SetupFailure, SetupOutcome } from '../domain/workspace-setup';
import type { Db } from './pool';

export interface PreparationSettings {
  copyFiles: string[];
  setup: string[] | null;
  setupFailure: SetupFailure;
}

/** The settings of the repositories that have any (a repository with none is not in the map). */
export async function preparationSettings(db: Db, repositoryIds: string[]): Promise<Map<string, PreparationSettings>> {
  const res = await db.query<{
    id: string;
    copy_files: string[] | null;
    setup: string[] | null;
    setup_failure: SetupFailure;
  }>(
    `SELECT id, copy_files, setup, setup_failure FROM repositories
      WHERE id = ANY($1::uuid[]) AND (setup IS NOT NULL OR jsonb_array_length(coalesce(copy_files, '[]')) > 0)`,
    [repositoryIds],
  );
  return new Map(
    res.rows.map((r) => [r.id, { copyFiles: r.copy_files ?? [], setup: r.setup, setupFailure: r.setup_failure }]),
  );
}

export interface PreparationRecord {
  sessionId: string;
  repositoryId: string;
  environmentId: string;
  hostId: string;
  position: number;
  copied: CopyOutcome;
  setup: SetupOutcome | null;
  logPath: string | null;
  /** The log is on this SSH target (the setup ran there). */
  sshTargetId: string | null;
}

/** Recorded (a re-run of the same launch step records it again, the last one counts). */
export async function recordPreparation(db: Db, r: PreparationRecord): Promise<void> {
  await db.query(
    `INSERT INTO workspace_preparations
       (session_id, repository_id, environment_id, host_id, position, copied, skipped, setup_status, exit_code, signal, log_path, ssh_target_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
     ON CONFLICT (session_id, repository_id) DO UPDATE SET environment_id = $3, host_id = $4, position = $5,
       copied = $6, skipped = $7, setup_status = $8, exit_code = $9, signal = $10, log_path = $11,
       ssh_target_id = $12, created_at = now()`,
    [
      r.sessionId,
      r.repositoryId,
      r.environmentId,
      r.hostId,
      r.position,
      JSON.stringify(r.copied.files),
      JSON.stringify(r.copied.skipped),
      r.setup?.status ?? null,
      r.setup?.exitCode ?? null,
      r.setup?.signal ?? null,
      r.logPath,
      r.sshTargetId,
    ],
  );
}

export interface PreparationRow {
  session_id: string;
  repository_id: string;
  host_id: string;
  position: number;
  copied: string[];
  skipped: CopyOutcome['skipped'];
  setup_status: SetupOutcome['status'] | null;
  exit_code: number | null;
  signal: string | null;
  log_path: string | null;
  ssh_target_id: string | null;
}

/** What a preparation row is read as, by every reader. */
const PREPARATION_ROW = `SELECT session_id, repository_id, host_id, position, copied, skipped, setup_status, exit_code,
  signal, log_path, ssh_target_id FROM workspace_preparations`;

/** The preparations of these sessions, in repository order. */
export async function preparationsOf(db: Db, sessionIds: string[]): Promise<PreparationRow[]> {
  const res = await db.query<PreparationRow>(
    `${PREPARATION_ROW} WHERE session_id = ANY($1::uuid[]) ORDER BY session_id, position`,
    [sessionIds],
  );
  return res.rows;
}

/** The preparation of an environment's workspace as it was last made (the newest launch that made it), in repository order. */
export async function environmentPreparation(db: Db, environmentId: string): Promise<PreparationRow[]> {
  const res = await db.query<PreparationRow>(
    `${PREPARATION_ROW}
      WHERE environment_id = $1 AND session_id = (
        SELECT session_id FROM workspace_preparations WHERE environment_id = $1 ORDER BY created_at DESC LIMIT 1)
      ORDER BY position`,
    [environmentId],
  );
  return res.rows;
}
