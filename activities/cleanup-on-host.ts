/**
 * One cleanup attempt's work on one host, in one task-queue round trip: stop the task's agents
 * there, re-mark handed-over environments, then (on the workspace's host) the audited removal of
 * every worktree, the branch decisions and the task folder. Idempotent: a retried attempt finds
 * what is already gone and counts it done [R6.4, R6.6].
 */
import { dirtyWorkHandling, removesTask, type CleanupReport, type CleanupSnapshot, type CleanupTrigger } from '../domain/cleanup';
import { cleanupHostActivities } from './cleanup-host';
import type { ActivityDeps } from './deps';

export interface CleanupOnHostInput {
  hostId: string;
  trigger: CleanupTrigger;
  discardChanges: boolean;
  snapshot: CleanupSnapshot;
  report: CleanupReport;
}

const DONE = ['removed', 'saved_and_removed', 'already_gone'];

export function cleanupOnHostActivities(deps: ActivityDeps) {
  const steps = cleanupHostActivities(deps);
  return {
    async cleanupOnHost(input: CleanupOnHostInput): Promise<CleanupReport> {
      const { snapshot, hostId } = input;
      const report: CleanupReport = { ...input.report, worktrees: [...input.report.worktrees], branches: [] };
      // 1. The task's agents first.
      report.processesStopped += await steps.stopProcesses(snapshot.processes.filter((p) => p.hostId === hostId));
      report.processesStopped += await steps.stopUnrecordedStarts((snapshot.spawnIntents ?? []).filter((i) => i.hostId === hostId));
      for (const b of snapshot.borrowed) {
        if (b.action === 'handed_over' && b.toTaskId && b.taskFolder && b.hostId === hostId) {
          await steps.rewriteMarker({ taskFolder: b.taskFolder, fromTaskId: snapshot.taskId, toTaskId: b.toTaskId, environmentId: b.environmentId });
        }
      }
      if (snapshot.hostId !== hostId) return report;

      // 2. Each worktree: dirty work is kept (archive, reset) or saved first (consented delete).
      const dirty = dirtyWorkHandling(input.trigger, input.discardChanges);
      for (const worktree of snapshot.worktrees) {
        if (report.worktrees.some((w) => w.repositoryId === worktree.repositoryId && DONE.includes(w.outcome))) continue;
        const result = await steps.removeWorktreeAudited({ worktree, ownerTaskId: snapshot.taskId, taskFolder: snapshot.taskFolder, dirty });
        report.worktrees = report.worktrees.filter((w) => w.repositoryId !== worktree.repositoryId);
        report.worktrees.push({ repositoryId: worktree.repositoryId, worktreePath: worktree.worktreePath, outcome: result.outcome, ...(result.savedRef ? { savedRef: result.savedRef, savedCommit: result.savedCommit } : {}) });
      }

      // 3. Branches: archive and reset keep them; delete removes the task's own branch only when merged.
      for (const worktree of snapshot.worktrees) {
        if (!worktree.branch) continue;
        const outcome = removesTask(input.trigger) ? await steps.removeMergedBranch(worktree) : 'kept';
        report.branches.push({ repositoryId: worktree.repositoryId, branch: worktree.branch, outcome });
      }

      // 4. The task folder and its marker, when nothing else is left in it.
      if (snapshot.taskFolder) await steps.removeTaskFolder({ taskFolder: snapshot.taskFolder, ownerTaskId: snapshot.taskId });
      // 5. A deleted task's agent logs go with it.
      if (removesTask(input.trigger)) await steps.removeTaskLogs({ taskId: snapshot.taskId, sessionIds: snapshot.sessionIds ?? [] });
      return report;
    },
  };
}
