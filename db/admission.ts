/**
 * Launch admission: one transaction per launch, safe with any number of workers and gateways.
 * The task row lock orders concurrent admissions of one task; the unique constraints and
 * compare-and-set updates are what make the election correct.
 */
import type pg from 'pg';
import { classifyEnvironment, decideAdmission, type EnvironmentFacts } from '../domain/admission';
import type { RefusalCode } from '../domain/errors';
import type { LaunchPlan, LaunchRequest, SlotPlan } from '../domain/launch';
import { environmentWorkspacePath, taskFolder, worktreePath } from '../domain/task-layout';
import { activeRowsPerSlot, environmentOfTask, insertCreatingEnvironment, inventoryOf, markCreatingEnvironmentFailed, reelectMaterializer, type EnvironmentRow } from './environments';
import { insertSession, sessionState } from './sessions';
import { taskRepositories } from './tasks';

export type AdmissionOutcome = { kind: 'admitted'; plan: LaunchPlan } | { kind: 'refused'; code: RefusalCode | 'not_found' };

interface LockedTask {
  id: string;
  workspace_mode: 'new_workspace' | 'inherit_parent' | 'shared_group';
  archived_at: Date | null;
  cleanup_active: boolean;
}

export async function admitLaunch(client: pg.PoolClient, req: LaunchRequest, ids: { newEnvironmentId: string }, workspaceRoot: string): Promise<AdmissionOutcome> {
  const taskRes = await client.query<LockedTask>(
    `SELECT t.id, t.workspace_mode, t.archived_at,
            EXISTS (SELECT 1 FROM cleanup_jobs c WHERE c.task_id = t.id AND c.state NOT IN ('succeeded', 'cancelled')) AS cleanup_active
       FROM tasks t WHERE t.id = $1 FOR UPDATE OF t`,
    [req.taskId],
  );
  const task = taskRes.rows[0];
  if (!task) return { kind: 'refused', code: 'not_found' };
  if (task.cleanup_active) return { kind: 'refused', code: 'task_cleanup_in_progress' };
  if (task.archived_at) return { kind: 'refused', code: 'task_archived' };
  if (task.workspace_mode !== 'new_workspace') {
    // The parent and group paths of the admission table are decided by the same table but
    // need the borrowed-environment lookup; until then they are refused, never detached.
    return { kind: 'refused', code: 'workspace_reuse_unsupported' };
  }

  const repos = await taskRepositories(client, req.taskId);
  const slotKeys = repos.map((r) => ({ repositoryId: r.repository_id, branchSlug: r.branch_slug }));
  const env = await environmentOfTask(client, req.taskId, true);
  const facts: EnvironmentFacts | null = env
    ? {
        status: env.status,
        materialized: env.materialized,
        materializerState: env.materializer_session_id ? await sessionState(client, env.materializer_session_id) : null,
        activeRowsPerSlot: await activeRowsPerSlot(client, env.id, slotKeys),
      }
    : null;
  const decision = decideAdmission(task.workspace_mode, classifyEnvironment(facts));

  if (decision.kind === 'refuse') {
    if (decision.markEnvironmentFailed && env) await markCreatingEnvironmentFailed(client, env.id, null, 'materializer_gone');
    return { kind: 'refused', code: decision.code };
  }

  const folder = taskFolder(workspaceRoot, req.taskId);
  if (decision.kind === 'materialize') {
    // The local executor runs in the source checkout itself: one checkout, one working directory.
    if (req.executorType === 'local' && repos.length !== 1) return { kind: 'refused', code: 'workspace_reuse_unsupported' };
    const environmentId = env?.id ?? ids.newEnvironmentId;
    if (env) {
      if (!(await reelectMaterializer(client, { id: env.id, executorType: req.executorType, hostId: req.hostId, materializerSessionId: req.sessionId }))) {
        return { kind: 'refused', code: 'workspace_preparing' };
      }
    } else {
      await insertCreatingEnvironment(client, { id: environmentId, taskId: req.taskId, executorType: req.executorType, hostId: req.hostId, materializerSessionId: req.sessionId });
    }
    await insertSession(client, { id: req.sessionId, taskId: req.taskId, environmentId, executorType: req.executorType, agentProfile: req.agentProfile, command: req.command, name: req.name, role: 'materialized' });
    const slots: SlotPlan[] = repos.map((r) => ({
      repositoryId: r.repository_id,
      repositoryName: r.repository_name,
      sourcePath: r.repository_path,
      baseBranch: r.base_branch,
      branch: r.checkout_branch ?? r.branch_slug,
      branchSlug: r.branch_slug,
      createBranch: r.checkout_branch === null,
      worktreePath: req.executorType === 'local' ? r.repository_path : worktreePath(workspaceRoot, req.taskId, r.repository_name),
      position: r.position,
      recorded: null,
    }));
    return {
      kind: 'admitted',
      plan: {
        role: 'materialized',
        sessionId: req.sessionId,
        taskId: req.taskId,
        environmentId,
        environmentTaskId: req.taskId,
        executorType: req.executorType,
        hostId: req.hostId,
        workspacePath: req.executorType === 'local' ? slots[0]!.sourcePath : environmentWorkspacePath(workspaceRoot, req.taskId, slots),
        taskFolder: folder,
        slots,
      },
    };
  }

  // Attach to the canonical environment.
  const ready = env as EnvironmentRow;
  if (ready.executor_type !== req.executorType) {
    // An executor transition is never an attach [R3.1].
    return { kind: 'refused', code: 'workspace_reuse_unsupported' };
  }
  const rows = await inventoryOf(client, ready.id);
  await insertSession(client, { id: req.sessionId, taskId: req.taskId, environmentId: ready.id, executorType: req.executorType, agentProfile: req.agentProfile, command: req.command, name: req.name, role: 'attached' });
  const slots: SlotPlan[] = repos.map((r) => {
    const row = rows.find((x) => x.repository_id === r.repository_id && x.branch_slug === r.branch_slug)!;
    return {
      repositoryId: r.repository_id,
      repositoryName: r.repository_name,
      sourcePath: r.repository_path,
      baseBranch: r.base_branch,
      branch: row.worktree_branch ?? r.checkout_branch ?? r.branch_slug,
      branchSlug: r.branch_slug,
      createBranch: false,
      worktreePath: row.worktree_path ?? r.repository_path,
      position: r.position,
      recorded: { worktreeId: row.worktree_id, worktreePath: row.worktree_path, worktreeBranch: row.worktree_branch },
    };
  });
  return {
    kind: 'admitted',
    plan: {
      role: 'attached',
      sessionId: req.sessionId,
      taskId: req.taskId,
      environmentId: ready.id,
      environmentTaskId: ready.task_id,
      executorType: ready.executor_type,
      hostId: ready.host_id,
      workspacePath: ready.workspace_path!,
      taskFolder: folder,
      slots,
    },
  };
}
