/**
 * Launch admission: one transaction per launch, safe with any number of workers and gateways.
 * The task row lock (and the group row lock for shared_group) orders concurrent admissions;
 * the unique constraints and compare-and-set updates are what make the election correct.
 */
import type pg from 'pg';
import {
  classifyEnvironment,
  decideAdmission,
  isRemoteExecutor,
  isRunnableExecutor,
  type EnvironmentFacts,
  type EnvironmentSituation,
  type ExecutorType,
  type WorkspaceMode,
} from '../domain/admission';
import type { RefusalCode } from '../domain/errors';
import type { LaunchPlan, LaunchRequest } from '../domain/launch';
import {
  attachSlots,
  decideWorkspaceSteps,
  executorFitsSlots,
  materializedWorkspacePath,
  materializeSlots,
} from '../domain/launch-plan';
import { taskFolder } from '../domain/task-layout';
import { admissionTarget, repositorySlots, type AdmissionTarget } from './admission-target';
import {
  activeRowsPerSlot,
  insertCreatingEnvironment,
  inventoryOf,
  markCreatingEnvironmentFailed,
  reelectMaterializer,
} from './environments';
import { isUniqueViolation } from './pool';
import { insertSession, sessionState } from './sessions';

export type AdmissionOutcome =
  { kind: 'admitted'; plan: LaunchPlan } | { kind: 'refused'; code: RefusalCode | 'not_found' };

interface LockedTask {
  id: string;
  workspace_mode: WorkspaceMode;
  parent_task_id: string | null;
  group_id: string | null;
  archived_at: Date | null;
  cleanup_active: boolean;
}

async function situationOf(client: pg.PoolClient, target: AdmissionTarget): Promise<EnvironmentSituation> {
  if (target.unavailable) return 'unavailable';
  const env = target.env;
  const facts: EnvironmentFacts | null = env
    ? {
        status: env.status,
        materialized: env.materialized,
        materializerState: env.materializer_session_id ? await sessionState(client, env.materializer_session_id) : null,
        activeRowsPerSlot: await activeRowsPerSlot(client, env.id, target.slots),
      }
    : null;
  return classifyEnvironment(facts);
}

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
  };
  const outcome = await admitAnew(client, req, ids, workspaceRoot, (environmentId, executorType, role) =>
    insertSession(client, { ...session, executorType, environmentId, role }),
  );
  if (outcome.kind === 'admitted')
    await client.query('UPDATE sessions SET admitted_plan = $2 WHERE id = $1', [
      req.sessionId,
      JSON.stringify(outcome.plan),
    ]);
  return outcome;
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
): Promise<AdmissionOutcome> {
  const row = (
    await client.query<{
      task_id: string;
      executor_type: string;
      agent_profile: string;
      command: string[] | null;
      agent_env: Record<string, string>;
      name: string | null;
      admitted_run: string | null;
      admitted_plan: LaunchPlan | null;
    }>(
      'SELECT task_id, executor_type, agent_profile, command, agent_env, name, admitted_run, admitted_plan FROM sessions WHERE id = $1',
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
  const outcome = await admitAnew(client, launch, ids, workspaceRoot, async (environmentId, _executorType, role) => {
    // The materializer of a new workspace counts as alive while it prepares it (`starting`).
    // An attach to the environment it already had keeps the session's role (how it came there).
    await client.query(
      `UPDATE sessions SET environment_id = $2,
              role = CASE WHEN $3 = 'attached' AND environment_id IS NOT DISTINCT FROM $2::uuid THEN role ELSE $3 END,
              state = CASE WHEN $3 = 'materialized' THEN 'starting' ELSE state END, updated_at = now()
        WHERE id = $1`,
      [req.sessionId, environmentId, role],
    );
  });
  if (outcome.kind === 'admitted') {
    await client.query('UPDATE sessions SET admitted_plan = $2, admitted_run = $3 WHERE id = $1', [
      req.sessionId,
      JSON.stringify(outcome.plan),
      req.runId,
    ]);
  }
  return outcome;
}

/** Binds the admitted session to its environment: a new row for a launch, the existing one for a resume. */
type BindSession = (
  environmentId: string,
  executorType: ExecutorType,
  role: 'materialized' | 'attached' | 'transitioned',
) => Promise<void>;

/** An SSH target as admission needs it: where its workspaces go, and the host whose worker talks to it. */
interface AdmittedSshTarget {
  id: string;
  workspace_root: string;
  host_id: string;
}

async function sshTargetOf(client: pg.PoolClient, id: string | null | undefined): Promise<AdmittedSshTarget | null> {
  if (!id) return null;
  return (
    (await client.query<AdmittedSshTarget>('SELECT id, workspace_root, host_id FROM ssh_targets WHERE id = $1', [id]))
      .rows[0] ?? null
  );
}

async function admitAnew(
  client: pg.PoolClient,
  req: LaunchRequest,
  ids: { newEnvironmentId: string },
  hostWorkspaceRoot: string,
  bindSession: BindSession,
): Promise<AdmissionOutcome> {
  const taskRes = await client.query<LockedTask>(
    `SELECT t.id, t.workspace_mode, t.parent_task_id, t.group_id, t.archived_at,
            EXISTS (SELECT 1 FROM cleanup_jobs c WHERE c.task_id = t.id AND c.state NOT IN ('succeeded', 'cancelled')) AS cleanup_active
       FROM tasks t WHERE t.id = $1 FOR UPDATE OF t`,
    [req.taskId],
  );
  const task = taskRes.rows[0];
  if (!task) return { kind: 'refused', code: 'not_found' };
  if (task.cleanup_active) return { kind: 'refused', code: 'task_cleanup_in_progress' };
  if (task.archived_at) return { kind: 'refused', code: 'task_archived' };
  // An executor this host cannot run is refused before any write [R3].
  if (!isRunnableExecutor(req.executorType)) return { kind: 'refused', code: 'workspace_reuse_unsupported' };
  const executorType: ExecutorType = req.executorType;
  await client.query('UPDATE tasks SET last_activity_at = now() WHERE id = $1', [task.id]);

  const target = await admissionTarget(client, task);
  // `ssh` works on the target the request names, else the one its canonical environment is on,
  // from the repositories of the host whose worker talks to that target; a target unknown, or
  // held by another host, cannot take it.
  const ssh =
    executorType === 'ssh'
      ? await sshTargetOf(
          client,
          req.sshTargetId ?? (target.env?.executor_type === 'ssh' ? target.env.ssh_target_id : null),
        )
      : null;
  if (executorType === 'ssh' && (!ssh || ssh.host_id !== (target.env?.host_id ?? req.hostId)))
    return { kind: 'refused', code: 'workspace_reuse_unsupported' };
  const workspaceRoot = ssh?.workspace_root ?? hostWorkspaceRoot;
  const decision = decideAdmission(task.workspace_mode, await situationOf(client, target));
  if (decision.kind === 'refuse') {
    if (decision.markEnvironmentFailed && target.env)
      await markCreatingEnvironmentFailed(client, target.env.id, null, 'materializer_gone');
    return { kind: 'refused', code: decision.code };
  }

  if (decision.kind === 'materialize') {
    // The local executor runs in the source checkout itself: one checkout, one working directory.
    if (!executorFitsSlots(executorType, target.slots.length))
      return { kind: 'refused', code: 'workspace_reuse_unsupported' };
    const env = target.env;
    const environmentId = env?.id ?? ids.newEnvironmentId;
    if (env) {
      if (
        !(await reelectMaterializer(client, {
          id: env.id,
          executorType,
          hostId: req.hostId,
          materializerSessionId: req.sessionId,
          sshTargetId: ssh?.id ?? null,
        }))
      ) {
        return { kind: 'refused', code: 'workspace_preparing' };
      }
    } else {
      try {
        await insertCreatingEnvironment(client, {
          id: environmentId,
          taskId: target.ownerTaskId,
          executorType,
          hostId: req.hostId,
          materializerSessionId: req.sessionId,
          sshTargetId: ssh?.id ?? null,
        });
        if (target.groupId) {
          const elected = await client.query(
            'UPDATE workspace_groups SET environment_id = $2 WHERE id = $1 AND environment_id IS NULL',
            [target.groupId, environmentId],
          );
          if (elected.rowCount !== 1) return { kind: 'refused', code: 'workspace_preparing' };
        }
      } catch (err) {
        // Another admission elected first (the constraint is the arbiter).
        if (isUniqueViolation(err)) return { kind: 'refused', code: 'workspace_preparing' };
        throw err;
      }
    }
    await bindSession(environmentId, executorType, 'materialized');
    const generation = env?.layout_generation ?? 0;
    // A released environment's folder was on its previous executor's place; a new one is where
    // this executor works. Its worktrees are planned in it: after a hand-over that is the old
    // owner's folder, where a kept dirty worktree still is (and its marker names the new owner).
    const folder =
      (env && samePlace(env, executorType, ssh) ? env.task_folder : null) ??
      taskFolder(workspaceRoot, target.ownerTaskId, generation);
    const slots = materializeSlots(target.slots, executorType, folder, generation);
    return {
      kind: 'admitted',
      plan: {
        role: 'materialized',
        workspace: decideWorkspaceSteps('materialized', executorType),
        sessionId: req.sessionId,
        taskId: req.taskId,
        environmentId,
        environmentTaskId: target.ownerTaskId,
        executorType,
        hostId: req.hostId,
        workspacePath: materializedWorkspacePath(slots, executorType, folder),
        taskFolder: folder,
        slots,
        sshTargetId: ssh?.id ?? null,
      },
    };
  }

  // Attach to the canonical environment.
  const env = target.env!;
  if (env.executor_type !== executorType || (executorType === 'ssh' && env.ssh_target_id !== ssh!.id)) {
    // A borrowed environment of another executor is refused, never detached [R3].
    if (task.workspace_mode !== 'new_workspace') return { kind: 'refused', code: 'workspace_reuse_unsafe' };
    // On the task's own environment a different executor is a transition, never an attach:
    // nothing of the old environment is reused [R3.1]; the target workspace is planned afresh.
    if (!executorFitsSlots(executorType, target.slots.length))
      return { kind: 'refused', code: 'workspace_reuse_unsupported' };
    await bindSession(env.id, executorType, 'transitioned');
    // The host's executors share the task folder; a move to or from a remote place plans it there afresh.
    const folder =
      (samePlace(env, executorType, ssh) ? env.task_folder : null) ??
      taskFolder(workspaceRoot, env.task_id, env.layout_generation);
    const slots = materializeSlots(target.slots, executorType, folder, env.layout_generation);
    return {
      kind: 'admitted',
      plan: {
        role: 'transitioned',
        workspace: decideWorkspaceSteps('transitioned', executorType),
        sessionId: req.sessionId,
        taskId: req.taskId,
        environmentId: env.id,
        environmentTaskId: env.task_id,
        executorType,
        hostId: env.host_id,
        workspacePath: materializedWorkspacePath(slots, executorType, folder),
        taskFolder: folder,
        slots,
        transition: { fromExecutorType: env.executor_type, ownershipGeneration: env.ownership_generation },
        sshTargetId: ssh?.id ?? null,
      },
    };
  }
  if (env.task_id !== req.taskId) {
    // A borrowing task may only ask for repositories the environment holds.
    const own = await repositorySlots(client, req.taskId);
    if (!own.every((mine) => target.slots.some((s) => s.repositoryId === mine.repositoryId)))
      return { kind: 'refused', code: 'workspace_reuse_unsafe' };
  }
  const rows = await inventoryOf(client, env.id);
  await bindSession(env.id, executorType, 'attached');
  return {
    kind: 'admitted',
    plan: {
      role: 'attached',
      workspace: decideWorkspaceSteps('attached', env.executor_type),
      sessionId: req.sessionId,
      taskId: req.taskId,
      environmentId: env.id,
      environmentTaskId: env.task_id,
      executorType: env.executor_type,
      hostId: env.host_id,
      workspacePath: env.workspace_path!,
      taskFolder: env.task_folder ?? taskFolder(workspaceRoot, env.task_id, env.layout_generation),
      slots: attachSlots(
        target.slots,
        rows.map((r) => ({
          repositoryId: r.repository_id,
          branchSlug: r.branch_slug,
          worktreeId: r.worktree_id,
          worktreePath: r.worktree_path,
          worktreeBranch: r.worktree_branch,
        })),
      ),
      sshTargetId: env.ssh_target_id,
    },
  };
}

/** Whether an environment's folder is where an executor works: both on the host, or both on the same target. */
const samePlace = (
  env: { executor_type: ExecutorType; ssh_target_id: string | null },
  executor: ExecutorType,
  ssh: AdmittedSshTarget | null,
): boolean =>
  isRemoteExecutor(env.executor_type) === isRemoteExecutor(executor) && env.ssh_target_id === (ssh?.id ?? null);
