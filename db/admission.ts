/**
 * Launch admission: one transaction per launch, safe with any number of workers and gateways.
 * A launch and a resume enter here; each records the plan it admitted on its session row, so a
 * re-run answers that plan instead of admitting twice. The admission itself (the locks, the
 * election, the plan): db/admission-election.ts.
 */
import type pg from 'pg';
import type { LaunchPlan, LaunchRequest } from '../domain/launch';
import type { AgentLimits } from '../domain/limits';
import { admitAnew, type AdmissionOutcome } from './admission-election';
import { insertSession } from './sessions';

/**
 * Admission in the caller's transaction. Run again for the same session (the step re-run after
 * a worker died before its workflow task completed), it answers the plan it admitted the first
 * time: the session row holds it.
 */
export async function admitLaunch(
  client: pg.PoolClient,
  req: LaunchRequest,
  ids: { newEnvironmentId: string },
  workspaceRoot: string,
  defaultDiskQuota: number | null = null,
): Promise<AdmissionOutcome> {
  const prior = await client.query<{ admitted_plan: LaunchPlan | null }>(
    'SELECT admitted_plan FROM sessions WHERE id = $1',
    [req.sessionId],
  );
  if (prior.rows[0]?.admitted_plan) return { kind: 'admitted', plan: prior.rows[0].admitted_plan };
  const session = {
    id: req.sessionId,
    taskId: req.taskId,
    agentProfile: req.agentProfile,
    command: req.command,
    env: req.env ?? {},
    name: req.name,
    limits: req.limits ?? null,
    image: req.image ?? null,
  };
  // The session row is written with the plan it was admitted with: one statement. The plan carries
  // the session's limits to its agent's start (the same object is the admission's answer).
  return admitAnew(
    client,
    req,
    ids,
    workspaceRoot,
    (environmentId, executorType, role, plan) => {
      if (req.limits) plan.limits = req.limits;
      if (req.image && executorType === 'container') plan.image = req.image;
      plan.agentProfile = req.agentProfile;
      return insertSession(client, { ...session, executorType, environmentId, role, admittedPlan: plan });
    },
    defaultDiskQuota,
  );
}

/**
 * A resume is a launch of an existing session: the same table, the same checks, the same
 * transitions, with the session's own executor [R2]. A refusal changes nothing; the run is
 * counted (`resume_count`) once its agent started (db/sessions.ts `markSessionStarted`). Run again for the same run (a worker died
 * before its workflow task completed), it answers the plan it admitted the first time.
 */
export async function admitResume(
  client: pg.PoolClient,
  req: { sessionId: string; runId: string; hostId: string },
  ids: { newEnvironmentId: string },
  workspaceRoot: string,
  defaultDiskQuota: number | null = null,
): Promise<AdmissionOutcome> {
  const row = (
    await client.query<{
      task_id: string;
      executor_type: string;
      agent_profile: string;
      command: string[] | null;
      agent_env: Record<string, string>;
      agent_limits: AgentLimits | null;
      container_image: string | null;
      name: string | null;
      admitted_run: string | null;
      admitted_plan: LaunchPlan | null;
    }>(
      'SELECT task_id, executor_type, agent_profile, command, agent_env, agent_limits, container_image, name, admitted_run, admitted_plan FROM sessions WHERE id = $1',
      [req.sessionId],
    )
  ).rows[0];
  if (!row) return { kind: 'refused', code: 'not_found' };
  if (row.admitted_run === req.runId && row.admitted_plan) return { kind: 'admitted', plan: row.admitted_plan };
  const launch: LaunchRequest = {
    sessionId: req.sessionId,
    taskId: row.task_id,
    executorType: row.executor_type as LaunchRequest['executorType'],
    agentProfile: row.agent_profile,
    command: row.command ?? [],
    env: row.agent_env,
    name: row.name,
    hostId: req.hostId,
  };
  return admitAnew(
    client,
    launch,
    ids,
    workspaceRoot,
    async (environmentId, _executorType, role, plan) => {
      // A resume's agent gets the limits its session's launch resolved (the same object is the answer).
      if (row.agent_limits) plan.limits = row.agent_limits;
      if (row.container_image) plan.image = row.container_image;
      plan.agentProfile = row.agent_profile;
      // The materializer of a new workspace counts as alive while it prepares it (`starting`).
      // An attach to the environment it already had keeps the session's role (how it came there).
      // The run's plan is recorded in the same statement.
      await client.query(
        `UPDATE sessions SET environment_id = $2,
              role = CASE WHEN $3 = 'attached' AND environment_id IS NOT DISTINCT FROM $2::uuid THEN role ELSE $3 END,
              state = CASE WHEN $3 = 'materialized' THEN 'starting' ELSE state END, updated_at = now(),
              admitted_plan = $4, admitted_run = $5
        WHERE id = $1`,
        [req.sessionId, environmentId, role, JSON.stringify(plan), req.runId],
      );
    },
    defaultDiskQuota,
  );
}
