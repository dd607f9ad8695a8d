/**
 * Restore on the next launch [R6.10]: a new worktree of a task whose earlier worktree was
 * released with its work saved gets that work back, exactly as it was, before its agent starts.
 * An entry that does not apply (the branch moved since) leaves the worktree clean on its branch
 * and says `conflict`; one that fails to apply (a disk that filled) fails the launch, undone like
 * any failed first launch. The saved ref stays, so nothing is lost either way.
 */
import { access } from 'node:fs/promises';
import { forgetRestoresOf, recordRestore, workToRestore } from '../db/saved-work';
import type { LaunchPlan, MaterializedSlot } from '../domain/launch';
import type { Executor } from '../executors/executor';
import type { ActivityDeps } from '../executors/support/deps';

export async function restoreSavedWork(
  { pool, logger }: ActivityDeps,
  executor: Executor,
  plan: LaunchPlan,
  made: MaterializedSlot[],
  /** Repositories whose new worktree its preparation wrote into (their restore wins over that). */
  prepared: ReadonlySet<string> = new Set(),
): Promise<void> {
  if (made.length === 0) return;
  const entries = await workToRestore(
    pool,
    plan.environmentTaskId,
    made.map((slot) => slot.repositoryId),
  );
  for (const entry of entries) {
    const slot = made.find((m) => m.repositoryId === entry.repositoryId)!;
    // An executor that cannot restore leaves the entry for a launch on one that can (listed, never lost).
    if (!executor.restoreWork) continue;
    // A restore that fails (rather than finding the work does not fit) fails the materialization,
    // which is then undone whole (workspace-materialize.ts): `conflict` is said only of a worktree
    // left clean on its branch.
    const outcome = await executor.restoreWork(plan, slot, entry.commit, prepared.has(entry.repositoryId));
    if (outcome === 'conflict')
      logger.warn(
        { repositoryId: entry.repositoryId, sessionId: plan.sessionId },
        'saved work does not apply to the branch as it is now; the worktree is left clean',
      );
    await recordRestore(pool, { repositoryId: entry.repositoryId, ref: entry.ref, outcome, sessionId: plan.sessionId });
  }
}

/**
 * After a failed launch's undo: a new worktree it removed took no restored work with it (git
 * removes only a clean one), so its entries are given back for the next launch; one it kept
 * holds the work, and its entry stays applied.
 */
export async function giveBackRestores(
  { pool }: ActivityDeps,
  plan: LaunchPlan,
  made: MaterializedSlot[],
): Promise<void> {
  const gone: string[] = [];
  for (const slot of made)
    if (
      !(await access(slot.worktreePath).then(
        () => true,
        () => false,
      ))
    )
      gone.push(slot.repositoryId);
  if (gone.length > 0) await forgetRestoresOf(pool, plan.sessionId, gone);
}
