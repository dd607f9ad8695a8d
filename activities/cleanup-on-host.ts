/**
 * One cleanup attempt's work on one host, in one task-queue round trip: stop the task's agents
 * there, re-mark handed-over environments, then (on the workspace's host) the audited removal of
 * every worktree, the branch decisions and the task folder. Idempotent: a retried attempt finds
 * what is already gone and counts it done [R6.4, R6.6].
 */
import { dirtyWorkHandling, removesTask, type CleanupTrigger } from '../domain/cleanup';
import { isDoneOutcome, reportedOutcome, type CleanupReport, type CleanupSnapshot } from '../domain/cleanup-snapshot';
import { cleanupHostActivities } from './cleanup-host';
import type { ActivityDeps } from '../executors/support/deps';
import { taskFolderOf } from '../domain/task-layout';

export interface CleanupOnHostInput {
  hostId: string;
  trigger: CleanupTrigger;
  discardChanges: boolean;
  snapshot: CleanupSnapshot;
  report: CleanupReport;
}

export function cleanupOnHostActivities(deps: ActivityDeps) {
  const steps = cleanupHostActivities(deps);
  return {
    async cleanupOnHost(input: CleanupOnHostInput): Promise<CleanupReport> {
      const { snapshot, hostId } = input;
      const report: CleanupReport = { ...input.report, worktrees: [...input.report.worktrees], branches: [] };
      // 1. The task's agents first.
      // (Agents on SSH targets this host talks to are stopped over SSH: pid + start time on the target.)
      report.processesStopped += await steps.stopProcesses(snapshot.processes.filter((p) => p.hostId === hostId));
      report.processesStopped += await steps.stopUnrecordedStarts(
        (snapshot.spawnIntents ?? []).filter((i) => i.hostId === hostId),
      );
      for (const b of snapshot.borrowed) {
        if (b.action === 'handed_over' && b.toTaskId && b.taskFolder && b.hostId === hostId) {
          await steps.rewriteMarker({
            taskFolder: b.taskFolder,
            fromTaskId: snapshot.taskId,
            toTaskId: b.toTaskId,
            environmentId: b.environmentId,
          });
        }
      }
      if (snapshot.hostId !== hostId) return report;

      // 1b. The task's container, its agents stopped (a `container` task's): removed, or the attempt fails and is retried.
      if (snapshot.environmentId && (await steps.removeTaskContainer(snapshot.environmentId)) === 'removed')
        report.container = 'removed';

      // 2. What the task's agents added to their task stores comes home first: the
      // status, the save, the merge check and the removal below all read it.
      await steps.bringAgentObjectsHome(snapshot.worktrees);

      // 3. Each worktree: dirty work is kept (archive, reset) or saved first (consented delete).
      const dirty = dirtyWorkHandling(input.trigger, input.discardChanges);
      // Rows with a path first: an inventory-only row of the same repository is then covered by them.
      for (const worktree of [...snapshot.worktrees].sort(
        (a, b) => Number(!a.worktreePath) - Number(!b.worktreePath),
      )) {
        if (isDoneOutcome(reportedOutcome(report, worktree))) continue;
        // An inventory-only row (no path) has nothing to remove: a repository reported already covers it.
        if (!worktree.worktreePath && report.worktrees.some((w) => w.repositoryId === worktree.repositoryId)) continue;
        // Each by the executor that holds it; a host worktree's marker is in its own task folder
        // (the environment's folder may be on a target after a transition).
        const result = await steps.removeWorktreeAudited({
          worktree,
          ownerTaskId: snapshot.taskId,
          taskFolder: worktree.worktreePath ? taskFolderOf(worktree.worktreePath) : snapshot.taskFolder,
          dirty,
          trigger: input.trigger,
        });
        report.worktrees = report.worktrees.filter(
          (w) => !(w.repositoryId === worktree.repositoryId && w.worktreePath === worktree.worktreePath),
        );
        report.worktrees.push({
          repositoryId: worktree.repositoryId,
          worktreePath: worktree.worktreePath,
          outcome: result.outcome,
          ...(result.savedRef ? { savedRef: result.savedRef, savedCommit: result.savedCommit } : {}),
          ...(result.reason ? { reason: result.reason } : {}),
          ...(result.leftOut?.length ? { leftOut: result.leftOut } : {}),
        });
      }

      // 4. Branches: archive and reset keep them; delete removes the task's own branch only when merged.
      for (const worktree of snapshot.worktrees) {
        if (!worktree.branch) continue;
        const outcome = removesTask(input.trigger) ? await steps.removeMergedBranch(worktree) : 'kept';
        report.branches.push({ repositoryId: worktree.repositoryId, branch: worktree.branch, outcome });
      }

      // 5. The task folders (the host's, a target's) and their markers, when nothing else is left in them.
      for (const folder of taskFolders(snapshot))
        await steps.removeTaskFolder({
          ...folder,
          ownerTaskId: snapshot.taskId,
          environmentId: snapshot.environmentId ?? '',
        });
      // 6. A deleted task's agent logs go with it.
      if (removesTask(input.trigger)) {
        // And its run folders on the SSH targets its agents ran on.
        await steps.removeTaskLogs({
          taskId: snapshot.taskId,
          sessionIds: snapshot.sessionIds ?? [],
          sshTargetIds: snapshot.runSshTargetIds ?? [],
        });
      }
      return report;
    },
  };
}

/**
 * Every task folder the snapshot's clones and worktrees are in, with the place it is on: the
 * environment's own, and those its retained rows were made in on another place (a transition
 * between the host and a target leaves the old executor's folder where it was).
 */
function taskFolders(snapshot: CleanupSnapshot): { taskFolder: string; sshTargetId: string | null }[] {
  const folders = new Map<string, { taskFolder: string; sshTargetId: string | null }>();
  const add = (taskFolder: string, sshTargetId: string | null) =>
    folders.set(`${sshTargetId ?? ''}\0${taskFolder}`, { taskFolder, sshTargetId });
  for (const w of snapshot.worktrees)
    if (w.worktreePath && (w.worktreeId || w.sshTargetId)) add(taskFolderOf(w.worktreePath), w.sshTargetId ?? null);
  if (snapshot.taskFolder && ![...folders.values()].some((f) => f.taskFolder === snapshot.taskFolder)) {
    // The environment's folder, on its own place: a target's when its active rows are remote.
    const remoteRow = snapshot.worktrees.find((w) => w.status === 'active' && w.sshTargetId);
    add(snapshot.taskFolder, remoteRow?.sshTargetId ?? null);
  }
  return [...folders.values()];
}
