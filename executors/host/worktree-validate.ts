/** Attach of a worktree workspace, read-only [R1.2]: each recorded worktree is where, what and whose the records say. */
import type { LaunchPlan, SlotPlan, ValidationProblem } from '../../domain/launch';
import { gitAt } from '../../git/git';
import { listWorktrees } from '../../git/worktrees';
import { validateOnHost } from './validation';
import { isRealDirectory, markerOwnedBy, readMarker, realPathOrResolved } from './workspace-fs';
import type { ActivityDeps } from '../support/deps';

export function worktreeValidation(deps: ActivityDeps): (plan: LaunchPlan) => Promise<void> {
  const gitOptions = { binary: deps.config.gitBinary };

  async function worktreeSlotProblem(plan: LaunchPlan, slot: SlotPlan): Promise<ValidationProblem | null> {
    const rec = slot.recorded;
    if (!rec?.worktreeId || !rec.worktreePath || !rec.worktreeBranch) return 'identity_missing';
    // Every fact is read at once (all read-only: the git process, lstat, realpath, the marker)
    // and judged in the same order as before, so a refusal names the same first problem.
    const [realDirectory, entries, recordedReal, marker] = await Promise.all([
      isRealDirectory(rec.worktreePath),
      listWorktrees(gitAt(slot.sourcePath, gitOptions)),
      realPathOrResolved(rec.worktreePath),
      readMarker(plan.taskFolder),
    ]);
    if (!realDirectory) return 'not_a_directory';
    // The registered entry whose real path is the recorded one (the last such, as git lists them);
    // each entry's path resolved once, all at the same time, against the recorded path resolved once.
    const entryReals = await Promise.all(entries.map((e) => realPathOrResolved(e.path)));
    let entry = null;
    for (let i = 0; i < entries.length; i++) if (entryReals[i] === recordedReal) entry = entries[i]!;
    if (!entry || entry.prunable) return 'not_registered';
    if (entry.branch !== rec.worktreeBranch) return 'branch_mismatch';
    if (!markerOwnedBy(marker, plan.environmentTaskId)) return 'marker_mismatch';
    return null;
  }

  return (plan) =>
    validateOnHost(deps, plan, { workspaceIsFolder: true, slotProblem: (slot) => worktreeSlotProblem(plan, slot) });
}
