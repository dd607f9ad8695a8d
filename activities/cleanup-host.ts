/**
 * The host side of cleanup, step by step: each step acts through the executor that holds what it
 * is given (executors/: a host worktree, a clone on a target), with the same audit, outcomes and
 * failure classes everywhere. Something already gone counts as done; failures are classified and
 * thrown, never swallowed [R6.4, R6.6]. The branch decisions and a handed-over marker are the
 * host repository's and the host folder's, whichever executor made the workspace.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { findExecution } from '../db/executions';
import { dropSpawnIntent } from '../db/spawn-intents';
import type { SnapshotProcess, SnapshotWorktree } from '../domain/cleanup-snapshot';
import { OWNERSHIP_MARKER_FILE, ownershipMarkerText } from '../domain/task-layout';
import { deleteBranchIfAt } from '../git/branches';
import type { RemovalOutcome, RemovalRequest } from '../executors/executor';
import { findMarkedGroup, stopMarkedGroup } from '../executors/host/process-identity';
import { repositoryTurns, type StepOutcome } from '../executors/host/repository-turns';
import { markerOwnedBy, readMarker } from '../executors/host/workspace-fs';
import { executorsOf } from '../executors/registry';
import type { ActivityDeps } from '../executors/support/deps';
import { cleanupFailure } from '../executors/support/failures';
import { removeEnvironmentContainer } from '../executors/container/containers';

export type { RemovalRequest } from '../executors/executor';

export function cleanupHostActivities(deps: ActivityDeps) {
  const { pool, config, logger } = deps;
  const executors = executorsOf(deps);
  const turns = repositoryTurns(pool, { binary: config.gitBinary }, logger);

  /** The task's recorded agents that still run are stopped, each by the executor that holds it. */
  async function stopProcesses(processes: SnapshotProcess[]): Promise<number> {
    let stopped = 0;
    for (const [executor, group] of executors.grouped(processes)) stopped += await executor.stopProcesses(group);
    return stopped;
  }

  return {
    stopProcesses,

    /** The environment's container on this host (executors/container/), with its record; an engine that does not answer fails the attempt, retried. */
    async removeTaskContainer(environmentId: string): Promise<'removed' | 'none'> {
      try {
        return await removeEnvironmentContainer(deps, environmentId);
      } catch (err) {
        logger.warn({ err, environmentId }, 'the task container could not be removed');
        throw cleanupFailure(
          'container_remove_failed',
          "The task's container could not be removed: its engine did not answer.",
        );
      }
    },

    /**
     * Agents whose start was intended but not recorded when the snapshot was taken: whatever
     * runs under their execution id's mark is stopped; an intent the start has since recorded
     * is an execution, stopped like the others.
     */
    async stopUnrecordedStarts(intents: { executionId: string }[]): Promise<number> {
      let stopped = 0;
      for (const intent of intents) {
        const exec = await findExecution(pool, intent.executionId);
        if (exec) {
          // Recorded since the snapshot: stopped like the others.
          if (exec.status === 'running')
            stopped += await stopProcesses([
              {
                executionId: exec.id,
                hostId: exec.host_id,
                pid: exec.pid,
                processStartTime: exec.process_start_time,
                ...(exec.ssh_target_id ? { sshTargetId: exec.ssh_target_id, logPath: exec.log_path } : {}),
              },
            ]);
          continue;
        }
        if (await findMarkedGroup(intent.executionId)) stopped++;
        if (!(await stopMarkedGroup(intent.executionId, config.agentStopGraceMs)))
          throw cleanupFailure('process_stop_failed', 'an agent process did not stop');
        await dropSpawnIntent(pool, intent.executionId);
      }
      return stopped;
    },

    /** A deleted task's agent logs (its log folder, and older per-session ones), and its run folders on targets; never a session delete's doing. */
    async removeTaskLogs(input: { taskId: string; sessionIds: string[]; sshTargetIds?: string[] }): Promise<void> {
      for (const removeTaskRuns of executors.distinct('removeTaskRuns'))
        await removeTaskRuns({ ...input, sshTargetIds: input.sshTargetIds ?? [] });
    },

    /** Repositories whose worktree or clone has uncommitted work (tracked or untracked), or whose status cannot be read. */
    async findDirtyWorktrees(worktrees: SnapshotWorktree[]): Promise<string[]> {
      const dirty: string[] = [];
      for (const [executor, group] of executors.grouped(worktrees)) dirty.push(...(await executor.findDirty(group)));
      return dirty;
    },

    async removeWorktreeAudited(req: RemovalRequest): Promise<RemovalOutcome> {
      return executors.at(req.worktree).removeAudited(req);
    },

    /** What the task's agents added or committed comes home first; one that cannot fails the attempt (retried) before anything is removed. */
    async bringAgentObjectsHome(worktrees: SnapshotWorktree[]): Promise<void> {
      for (const [executor, group] of executors.grouped(worktrees)) await executor.bringWorkHome(group);
    },

    /** Delete removes the task's own branch only when its commits are contained in the base branch. */
    async removeMergedBranch(w: SnapshotWorktree): Promise<'deleted_merged' | 'kept_unmerged' | 'kept'> {
      if (!w.branch || !w.taskOwnsBranch) return 'kept';
      const branch = w.branch;
      // Its commit and whether the base contains it are read with the turn's other branches.
      return turns.inTurn(
        w.repositoryId,
        w.sourcePath,
        async (turn): Promise<StepOutcome<'deleted_merged' | 'kept_unmerged'>> => {
          // Not readable: the attempt fails (retried), never counts the branch gone.
          const { commit, merged } = await turn.branch(branch, w.baseBranch).catch((err: unknown) => {
            logger.warn({ err, repositoryId: w.repositoryId }, 'task branches could not be read');
            throw cleanupFailure('branch_cleanup_failed', 'the task branch could not be read');
          });
          if (!commit) return { value: 'deleted_merged' }; // already gone
          // A worktree still on the branch (kept because dirty) keeps it: read after this turn's removals.
          if ((await turn.current()).some((e) => e.branch === branch)) return { value: 'kept_unmerged' };
          if (!merged) return { value: 'kept_unmerged' };
          try {
            await deleteBranchIfAt(turn.git, branch, commit);
          } catch {
            throw cleanupFailure('branch_cleanup_failed', 'the merged task branch could not be deleted');
          }
          turn.branchDeleted(branch);
          return { value: 'deleted_merged' };
        },
        { name: branch, base: w.baseBranch },
      );
    },

    /** A handed-over environment's marker names its new owner, so the new owner's sessions pass the attach audit. */
    async rewriteMarker(input: {
      taskFolder: string;
      fromTaskId: string;
      toTaskId: string;
      environmentId: string;
    }): Promise<void> {
      const marker = await readMarker(input.taskFolder);
      if (markerOwnedBy(marker, input.toTaskId)) return;
      if (
        marker === null ||
        marker === 'unreadable' ||
        marker.taskId !== input.fromTaskId ||
        marker.environmentId !== input.environmentId
      ) {
        throw cleanupFailure('worktree_audit_foreign_marker', 'the ownership marker does not name the task');
      }
      await writeFile(
        path.join(input.taskFolder, OWNERSHIP_MARKER_FILE),
        ownershipMarkerText(input.toTaskId, input.environmentId),
      );
    },

    /** The marker and the task folder go last (the host's, or a target's), and only when nothing else is left in it. */
    async removeTaskFolder(input: {
      taskFolder: string;
      ownerTaskId: string;
      sshTargetId?: string | null;
      environmentId?: string;
    }): Promise<boolean> {
      return executors.at(input).removeTaskFolder({ ...input, environmentId: input.environmentId ?? '' });
    },
  };
}
