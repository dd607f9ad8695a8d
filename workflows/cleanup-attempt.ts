/** One attempt of a cleanup: stop agents, audited removal per worktree, branches, folder. Idempotent. */
import { removesTask, type CleanupInput, type CleanupReport, type CleanupSnapshot } from '../domain/cleanup';
import { hostSteps, recordSteps } from './activity-proxies';

const records = recordSteps();

export async function cleanupAttempt(input: CleanupInput, snapshot: CleanupSnapshot, report: CleanupReport, phase: (p: string) => void): Promise<void> {
  // 1. Stop the task's agent processes first, on the hosts they run on.
  phase('stopping_agents');
  const hosts = [...new Set(snapshot.processes.map((p) => p.hostId))];
  let stopped = 0;
  for (const hostId of hosts) stopped += await hostSteps(hostId).stopProcesses(snapshot.processes.filter((p) => p.hostId === hostId));
  report.processesStopped += stopped;
  if (!removesTask(input.trigger)) await records.markTaskSessionsStopped(input.taskId);
  for (const b of snapshot.borrowed) {
    if (b.action === 'handed_over' && b.toTaskId && b.taskFolder) {
      await hostSteps(b.hostId).rewriteMarker({ taskFolder: b.taskFolder, fromTaskId: snapshot.taskId, toTaskId: b.toTaskId, environmentId: b.environmentId });
    }
  }
  if (!snapshot.hostId) return;
  const host = hostSteps(snapshot.hostId);

  // 2. Each worktree: audited removal; dirty work is kept (archive, reset) or saved first (consented delete).
  phase('removing_worktrees');
  const dirty = removesTask(input.trigger) && input.discardChanges ? 'save' : 'keep';
  for (const worktree of snapshot.worktrees) {
    if (report.worktrees.some((w) => w.repositoryId === worktree.repositoryId && (w.outcome === 'removed' || w.outcome === 'saved_and_removed' || w.outcome === 'already_gone'))) continue;
    const result = await host.removeWorktreeAudited({ worktree, ownerTaskId: snapshot.taskId, taskFolder: snapshot.taskFolder, dirty });
    report.worktrees = report.worktrees.filter((w) => w.repositoryId !== worktree.repositoryId);
    report.worktrees.push({ repositoryId: worktree.repositoryId, worktreePath: worktree.worktreePath, outcome: result.outcome, ...(result.savedRef ? { savedRef: result.savedRef } : {}) });
  }

  // 3. Branches: archive and reset keep them; delete removes the task's own branch only when merged.
  phase('branches');
  report.branches = [];
  for (const worktree of snapshot.worktrees) {
    if (!worktree.branch) continue;
    const outcome = removesTask(input.trigger) ? await host.removeMergedBranch(worktree) : 'kept';
    report.branches.push({ repositoryId: worktree.repositoryId, branch: worktree.branch, outcome });
  }

  // 4. The task folder and its marker, when nothing else is left in it.
  phase('removing_folder');
  if (snapshot.taskFolder) await host.removeTaskFolder({ taskFolder: snapshot.taskFolder, ownerTaskId: snapshot.taskId });
}
