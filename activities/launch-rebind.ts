/**
 * The inventory rows a launch publishes, and an executor transition's rebinding of its environment
 * (activities/launch-records.ts calls both).
 */
import { randomUUID } from 'node:crypto';
import { cleanupBarrierStands } from '../db/barrier';
import { upsertInventoryRow, type IncomingInventoryRow } from '../db/inventory';
import type pg from 'pg';
import { inTransaction } from '../db/pool';
import { workspaceKindOf } from '../domain/admission';
import type { LaunchPlan, MaterializedSlot } from '../domain/launch';
import { typedFailure } from '../executors/support/failures';

export function inventoryRowsOf(plan: LaunchPlan, made: MaterializedSlot[]): IncomingInventoryRow[] {
  return plan.slots.map((slot) => {
    const m = made.find((x) => x.repositoryId === slot.repositoryId);
    return {
      id: randomUUID(),
      repositoryId: slot.repositoryId,
      branchSlug: slot.branchSlug,
      executorType: workspaceKindOf(plan.executorType),
      sshTargetId: plan.sshTargetId ?? null,
      identity: m
        ? {
            worktreeId: m.worktreeId,
            worktreePath: m.worktreePath,
            worktreeBranch: m.branch,
            made: { branch: m.createdBranch, worktree: m.createdWorktree },
          }
        : null,
      headCommit: m?.headCommit ?? null,
      position: slot.position,
      error: null,
    };
  });
}

/**
 * An executor transition rebinds the environment only after the target launch succeeded, in
 * one compare-and-set on id, executor type and ownership generation [R3]. The previous
 * executor's rows become `retained`: still known to cleanup, never orphans.
 */
export async function rebindEnvironment(pool: pg.Pool, plan: LaunchPlan, made: MaterializedSlot[]): Promise<void> {
  const from = plan.transition!;
  const kind = workspaceKindOf(plan.executorType); // what the environment records: its workspace's kind
  const outcome = await inTransaction(pool, async (client) => {
    if (await cleanupBarrierStands(client, [plan.taskId, plan.environmentTaskId])) return 'barrier' as const;
    // The transition's session becomes the materializer of the environment's new workspace,
    // which also tells a re-run of this step (after a worker died) that it is done already.
    const moved = await client.query(
      `UPDATE task_environments
          SET executor_type = $2, workspace_path = $3, task_folder = $4, status = 'ready', materialized = true,
              ownership_generation = ownership_generation + 1, materializer_session_id = $7, ssh_target_id = $8, updated_at = now()
        WHERE id = $1 AND executor_type = $5 AND ownership_generation = $6 AND status IN ('ready', 'stopped')`,
      [
        plan.environmentId,
        kind,
        plan.workspacePath,
        plan.taskFolder,
        from.fromExecutorType,
        from.ownershipGeneration,
        plan.sessionId,
        plan.sshTargetId ?? null,
      ],
    );
    if (moved.rowCount !== 1) {
      const mine = await client.query(
        'SELECT 1 FROM task_environments WHERE id = $1 AND materializer_session_id = $2 AND executor_type = $3 AND ownership_generation = $4',
        [plan.environmentId, plan.sessionId, kind, from.ownershipGeneration + 1],
      );
      return mine.rowCount === 1 ? ('rebound' as const) : ('changed' as const);
    }
    await client.query(
      `UPDATE environment_repos SET status = 'retained', updated_at = now() WHERE environment_id = $1 AND status = 'active'`,
      [plan.environmentId],
    );
    // Back to a workspace kept from before (worktree → local → worktree): the folder's
    // retained row is its row, active again, so one row names each folder (the new one
    // merges into it) and no cleanup reads the folder twice.
    await client.query(
      `UPDATE environment_repos SET status = 'active', updated_at = now()
        WHERE environment_id = $1 AND status = 'retained' AND executor_type = $2 AND ssh_target_id IS NOT DISTINCT FROM $3 AND worktree_path = ANY($4::text[])`,
      [plan.environmentId, kind, plan.sshTargetId ?? null, made.map((m) => m.worktreePath)],
    );
    for (const row of inventoryRowsOf(plan, made)) await upsertInventoryRow(client, plan.environmentId, row);
    return 'rebound' as const;
  });
  if (outcome === 'barrier') throw typedFailure('task_cleanup_in_progress');
  if (outcome === 'changed') throw typedFailure('workspace_reuse_unsafe', { problem: 'environment_changed' });
}
