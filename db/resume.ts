/**
 * What a resume restarts, and where: exactly the canonical workspace the session's environment
 * records [R2.1]; the source checkout only when no materialized workspace exists [R2.3].
 */
import type { RefusalCode } from '../domain/errors';
import type { LaunchPlan } from '../domain/launch';
import { attachSlots } from '../domain/launch-plan';
import { taskFolder } from '../domain/task-layout';
import { repositorySlots } from './admission-target';
import { cleanupBarrierStands } from './barrier';
import { environmentById, inventoryOf } from './environments';
import type { Db } from './pool';
import { findSession } from './sessions';

export interface ResumePlan {
  plan: LaunchPlan;
  command: string[];
  env: Record<string, string>;
  /** The session runs on its source checkout because no materialized workspace exists (legacy). */
  legacyFallback: boolean;
  runningExecutions: { executionId: string; hostId: string }[];
}

export async function planResume(db: Db, sessionId: string, workspaceRoot: string, defaultHostId: string): Promise<{ kind: 'plan'; resume: ResumePlan } | { kind: 'refused'; code: RefusalCode | 'not_found' }> {
  const session = await findSession(db, sessionId);
  if (!session) return { kind: 'refused', code: 'not_found' };
  const task = (await db.query<{ archived_at: Date | null }>('SELECT archived_at FROM tasks WHERE id = $1', [session.task_id])).rows[0];
  if (!task) return { kind: 'refused', code: 'not_found' };
  if (task.archived_at) return { kind: 'refused', code: 'task_archived' };
  const env = session.environment_id ? await environmentById(db, session.environment_id) : null;
  if (await cleanupBarrierStands(db, [session.task_id, ...(env ? [env.task_id] : [])])) return { kind: 'refused', code: 'task_cleanup_in_progress' };
  const running = (await db.query<{ id: string; host_id: string }>(`SELECT id, host_id FROM executions WHERE session_id = $1 AND status = 'running'`, [sessionId])).rows;
  const base = { command: session.command ?? [], env: session.agent_env ?? {}, runningExecutions: running.map((r) => ({ executionId: r.id, hostId: r.host_id })) };

  if (env && env.materialized && env.workspace_path) {
    if (env.status !== 'ready' && env.status !== 'stopped') return { kind: 'refused', code: 'workspace_reuse_unsafe' };
    const rows = await inventoryOf(db, env.id);
    const slots = attachSlots(
      await repositorySlots(db, env.task_id),
      rows.map((r) => ({ repositoryId: r.repository_id, branchSlug: r.branch_slug, worktreeId: r.worktree_id, worktreePath: r.worktree_path, worktreeBranch: r.worktree_branch })),
    );
    return {
      kind: 'plan',
      resume: {
        ...base,
        legacyFallback: false,
        plan: {
          role: 'attached',
          sessionId,
          taskId: session.task_id,
          environmentId: env.id,
          environmentTaskId: env.task_id,
          executorType: env.executor_type,
          hostId: env.host_id,
          workspacePath: env.workspace_path,
          taskFolder: env.task_folder ?? taskFolder(workspaceRoot, env.task_id, env.layout_generation),
          slots,
        },
      },
    };
  }
  // No materialized or recovered workspace: a repo-backed session may fall back to its source checkout.
  const slots = await repositorySlots(db, session.task_id);
  if (slots.length === 0) return { kind: 'refused', code: 'workspace_reuse_unsafe' };
  return {
    kind: 'plan',
    resume: {
      ...base,
      legacyFallback: true,
      plan: {
        role: 'attached',
        sessionId,
        taskId: session.task_id,
        environmentId: env?.id ?? sessionId,
        environmentTaskId: session.task_id,
        executorType: 'local',
        hostId: env?.host_id ?? defaultHostId,
        workspacePath: slots[0]!.repositoryPath,
        taskFolder: taskFolder(workspaceRoot, session.task_id),
        slots: attachSlots(slots, []),
      },
    },
  };
}
