/**
 * The admission of a launch or resume not admitted yet, in the caller's transaction. The task row
 * lock (and the group row lock for shared_group) orders concurrent admissions; the unique
 * constraints and compare-and-set updates are what make the election correct.
 */
import { environmentOverQuota } from './disk';
import type pg from 'pg';
import {
  classifyEnvironment,
  decideAdmission,
  isRemoteExecutor,
  isRunnableExecutor,
  workspaceKindOf,
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
import { insertCreatingEnvironment, markCreatingEnvironmentFailed, reelectMaterializer } from './environments';
import { activeRowsPerSlot, inventoryOf } from './inventory';
import { isUniqueViolation } from './pool';
import { sessionState } from './sessions';

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
 * Binds the admitted session to its environment (a new row for a launch, the existing one for a
 * resume) and records the plan it was admitted with, in the same statement.
 */
type BindSession = (
  environmentId: string,
  executorType: ExecutorType,
  role: 'materialized' | 'attached' | 'transitioned',
  plan: LaunchPlan,
) => Promise<void>;

const admitted = async (
  bindSession: BindSession,
  environmentId: string,
  executorType: ExecutorType,
  plan: LaunchPlan,
): Promise<AdmissionOutcome> => {
  await bindSession(environmentId, executorType, plan.role, plan);
  return { kind: 'admitted', plan };
};

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

export async function admitAnew(
  client: pg.PoolClient,
  req: LaunchRequest,
  ids: { newEnvironmentId: string },
  hostWorkspaceRoot: string,
  bindSession: BindSession,
  defaultDiskQuota: number | null = null,
): Promise<AdmissionOutcome> {
  // The task's lock and, for a launch that goes on past these checks, its activity time: one
  // statement (the update only where none of the refusals below applies).
  const runnable = isRunnableExecutor(req.executorType);
  const taskRes = await client.query<LockedTask>(
    `WITH t AS (
       SELECT t.id, t.workspace_mode, t.parent_task_id, t.group_id, t.archived_at,
              EXISTS (SELECT 1 FROM cleanup_jobs c WHERE c.task_id = t.id AND c.state NOT IN ('succeeded', 'cancelled')) AS cleanup_active
         FROM tasks t WHERE t.id = $1 FOR UPDATE OF t),
     touched AS (
       UPDATE tasks SET last_activity_at = now() FROM t
        WHERE tasks.id = t.id AND NOT t.cleanup_active AND t.archived_at IS NULL AND $2::boolean)
     SELECT * FROM t`,
    [req.taskId, runnable],
  );
  const task = taskRes.rows[0];
  if (!task) return { kind: 'refused', code: 'not_found' };
  if (task.cleanup_active) return { kind: 'refused', code: 'task_cleanup_in_progress' };
  if (task.archived_at) return { kind: 'refused', code: 'task_archived' };
  // An executor this host cannot run is refused before any write [R3].
  if (!runnable) return { kind: 'refused', code: 'workspace_reuse_unsupported' };
  const executorType = req.executorType as ExecutorType;
  // The workspace it works in: a `container` task's is a worktree workspace (domain/admission.ts).
  const kind = workspaceKindOf(executorType);

  const target = await admissionTarget(client, task);
  // A workspace over its disk quota had its agents stopped; no agent starts in it again until it is under.
  if (target.env && (await environmentOverQuota(client, target.env.id, defaultDiskQuota)))
    return { kind: 'refused', code: 'task_disk_quota' };
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
    if (!executorFitsSlots(kind, target.slots.length)) return { kind: 'refused', code: 'workspace_reuse_unsupported' };
    const env = target.env;
    const environmentId = env?.id ?? ids.newEnvironmentId;
    if (env) {
      if (
        !(await reelectMaterializer(client, {
          id: env.id,
          executorType: kind,
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
          executorType: kind,
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
    const generation = env?.layout_generation ?? 0;
    // A released environment's folder was on its previous executor's place; a new one is where
    // this executor works. Its worktrees are planned in it: after a hand-over that is the old
    // owner's folder, where a kept dirty worktree still is (and its marker names the new owner).
    const folder =
      (env && samePlace(env, kind, ssh) ? env.task_folder : null) ??
      taskFolder(workspaceRoot, target.ownerTaskId, generation);
    const slots = materializeSlots(target.slots, kind, folder, generation);
    return admitted(bindSession, environmentId, executorType, {
      role: 'materialized',
      workspace: decideWorkspaceSteps('materialized', kind),
      sessionId: req.sessionId,
      taskId: req.taskId,
      environmentId,
      environmentTaskId: target.ownerTaskId,
      executorType,
      hostId: req.hostId,
      workspacePath: materializedWorkspacePath(slots, kind, folder),
      taskFolder: folder,
      slots,
      sshTargetId: ssh?.id ?? null,
    });
  }

  // Attach to the canonical environment.
  const env = target.env!;
  if (env.executor_type !== kind || (executorType === 'ssh' && env.ssh_target_id !== ssh!.id)) {
    // A borrowed environment of another executor is refused, never detached [R3].
    if (task.workspace_mode !== 'new_workspace') return { kind: 'refused', code: 'workspace_reuse_unsafe' };
    // On the task's own environment a different executor is a transition, never an attach:
    // nothing of the old environment is reused [R3.1]; the target workspace is planned afresh.
    if (!executorFitsSlots(kind, target.slots.length)) return { kind: 'refused', code: 'workspace_reuse_unsupported' };
    // The host's executors share the task folder; a move to or from a remote place plans it there afresh.
    const folder =
      (samePlace(env, kind, ssh) ? env.task_folder : null) ??
      taskFolder(workspaceRoot, env.task_id, env.layout_generation);
    const slots = materializeSlots(target.slots, kind, folder, env.layout_generation);
    return admitted(bindSession, env.id, executorType, {
      role: 'transitioned',
      workspace: decideWorkspaceSteps('transitioned', kind),
      sessionId: req.sessionId,
      taskId: req.taskId,
      environmentId: env.id,
      environmentTaskId: env.task_id,
      executorType,
      hostId: env.host_id,
      workspacePath: materializedWorkspacePath(slots, kind, folder),
      taskFolder: folder,
      slots,
      transition: { fromExecutorType: env.executor_type, ownershipGeneration: env.ownership_generation },
      sshTargetId: ssh?.id ?? null,
    });
  }
  if (env.task_id !== req.taskId) {
    // A borrowing task may only ask for repositories the environment holds.
    const own = await repositorySlots(client, req.taskId);
    if (!own.every((mine) => target.slots.some((s) => s.repositoryId === mine.repositoryId)))
      return { kind: 'refused', code: 'workspace_reuse_unsafe' };
  }
  const rows = await inventoryOf(client, env.id);
  // The environment's own executor, or `container` on its worktree workspace (its agents in the task's container).
  const attachedExecutor = executorType === 'container' ? executorType : env.executor_type;
  return admitted(bindSession, env.id, attachedExecutor, {
    role: 'attached',
    workspace: decideWorkspaceSteps('attached', env.executor_type),
    sessionId: req.sessionId,
    taskId: req.taskId,
    environmentId: env.id,
    environmentTaskId: env.task_id,
    executorType: attachedExecutor,
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
  });
}

/** Whether an environment's folder is where an executor works: both on the host, or both on the same target. */
const samePlace = (
  env: { executor_type: ExecutorType; ssh_target_id: string | null },
  executor: ExecutorType,
  ssh: AdmittedSshTarget | null,
): boolean =>
  isRemoteExecutor(env.executor_type) === isRemoteExecutor(executor) && env.ssh_target_id === (ssh?.id ?? null);
