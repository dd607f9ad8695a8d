/**
 * Cleanup of the `ssh` executor's clones, on the host whose worker talks to the target, with the
 * same audit, outcomes, failure classes and retry schedule as a host worktree:
 * - the audit over SSH: the clone is a real directory, a git top level, on the recorded branch,
 *   and the task folder's marker names the task; any doubt keeps it and names the reason;
 * - dirty work is kept (archive, reset) or saved first (a consented or automatic delete): saved
 *   as a commit on the HOST repository's hidden saved-work ref, brought back over SSH;
 * - the branch: its commits are brought back to the host repository (the task branch there, as a
 *   worktree's would be), so removing the clone loses nothing; nothing is pushed anywhere. A
 *   branch git will not bring back (diverged, or checked out on the host) keeps the clone and
 *   waits for an operator;
 * - then the removal, re-audited on the target in the same script right before it.
 */
import { ApplicationFailure } from '@temporalio/common';
import { findExecution } from '../../db/executions';
import { rebuildableOf } from '../../db/catalog';
import { recordSavedWork } from '../../db/saved-work';
import type { LeftOut } from '../../git/saved-work';
import { saveOfRemoval } from '../../domain/saved-work';
import { keepsWhenUnsaved, type CleanupErrorClass } from '../../domain/cleanup';
import type { SnapshotProcess, SnapshotWorktree } from '../../domain/cleanup-snapshot';
import type { CleanupOperations, RemovalOutcome, RemovalRequest } from '../executor';
import { cleanupFailure } from '../support/failures';
import { SshRefusal } from '../../ssh/connection';
import {
  bringBranchBack,
  removeRemoteClone,
  removeRemoteTaskFolderIfEmpty,
  saveRemoteWork,
} from '../../ssh/remote-cleanup';
import { removeRemoteTaskRuns } from '../../ssh/remote-agent';
import { remoteRunsDir } from '../../ssh/remote-log';
import { readRemoteWorkspace } from '../../ssh/remote-workspace';
import type { ActivityDeps } from '../support/deps';
import { sshAgents } from './agents';
import { ownershipMarkerText, taskFolderOf } from '../../domain/task-layout';
import { loadSshTarget, remoteCloneProblem } from './workspace';

/** A transport refusal as the cleanup failure class of the same name (retried, or an operator's for a changed host key). */
function classified(err: unknown): unknown {
  return err instanceof SshRefusal
    ? cleanupFailure(
        err.code,
        err.code === 'ssh_host_key_mismatch'
          ? 'the target presented another host key'
          : 'the SSH target did not answer',
      )
    : err;
}

/** What a cleanup names each audit problem of a remote clone: the classes a host worktree's audit uses. */
const AUDIT_FAILURES = {
  not_a_directory: 'worktree_audit_not_directory',
  not_registered: 'worktree_audit_unregistered',
  branch_mismatch: 'worktree_audit_other_branch',
  marker_mismatch: 'worktree_audit_foreign_marker',
} as const satisfies Record<string, CleanupErrorClass>;

export function sshCleanup(deps: ActivityDeps): CleanupOperations {
  const { pool, logger } = deps;
  const agents = sshAgents(deps);

  return {
    /** The task's agents on targets, each stopped through the one remote stop. */
    async stopProcesses(processes: SnapshotProcess[]): Promise<number> {
      let stopped = 0;
      for (const p of processes) {
        // Ended since the snapshot (its exit collected, or stopped): nothing to stop, nothing to
        // count. A row that is gone (a delete removes the task's sessions with their executions in
        // the transaction that took the snapshot) is no sign of an end: the snapshot's process is
        // stopped by its identity on the target, pid and start time.
        const row = await findExecution(pool, p.executionId);
        if (row && row.status !== 'running') continue;
        const status = await agents
          .stopAgent({
            id: p.executionId,
            pid: p.pid,
            process_start_time: p.processStartTime,
            log_path: p.logPath ?? '',
            ssh_target_id: p.sshTargetId ?? null,
          })
          .catch((err: unknown) => {
            if (err instanceof ApplicationFailure && err.type === 'internal')
              throw cleanupFailure('process_stop_failed', 'an agent process did not stop');
            if (
              err instanceof ApplicationFailure &&
              (err.type === 'ssh_target_unavailable' || err.type === 'ssh_host_key_mismatch')
            )
              throw cleanupFailure(err.type, 'the SSH target did not answer');
            throw err;
          });
        if (status === 'stopped') stopped++;
      }
      return stopped;
    },

    /** A clone's commits come home in its removal (`bringBranchBack`, right before it): nothing to bring before. */
    async bringWorkHome(): Promise<void> {},

    /** Repositories whose remote clone has uncommitted work, or whose state cannot be read (a target that does not answer included): dirty. */
    async findDirty(worktrees: SnapshotWorktree[]): Promise<string[]> {
      const dirty: string[] = [];
      for (const w of worktrees) {
        if (!w.worktreePath) continue;
        try {
          const target = await loadSshTarget(pool, w.sshTargetId);
          const facts = await readRemoteWorkspace(target, {
            taskFolder: taskFolderOf(w.worktreePath),
            workspacePath: w.worktreePath,
            repoPaths: [w.worktreePath],
            withDirty: true,
          });
          const slot = facts.slots[0]!;
          if (slot.exists && slot.realDirectory && slot.dirty !== 'clean') dirty.push(w.repositoryId);
        } catch (err) {
          logger.warn(
            { err: err instanceof Error ? err.message : err, repositoryId: w.repositoryId },
            'remote clone not examinable; it counts as dirty',
          );
          dirty.push(w.repositoryId);
        }
      }
      return dirty;
    },

    /** The marker that vouches for a clone is in its own folder on the target (`req.taskFolder` is the host's view). */
    async removeAudited(req: RemovalRequest): Promise<RemovalOutcome> {
      const w = req.worktree;
      if (!w.worktreePath || !w.branch) return { outcome: 'inventory_only' };
      const repoPath = w.worktreePath;
      const taskFolder = taskFolderOf(repoPath);
      try {
        const target = await loadSshTarget(pool, w.sshTargetId);
        const facts = await readRemoteWorkspace(target, {
          taskFolder,
          workspacePath: repoPath,
          repoPaths: [repoPath],
          withDirty: true,
        });
        const slot = facts.slots[0]!;
        const problem = remoteCloneProblem(slot, { path: repoPath, branch: w.branch }, facts.marker, req.ownerTaskId);
        if (problem === 'gone') return { outcome: 'already_gone' };
        if (problem || !slot.head)
          throw cleanupFailure(
            AUDIT_FAILURES[problem ?? 'not_registered'],
            'the remote clone is not what the inventory recorded',
          );

        if (slot.dirty !== 'clean' && req.dirty === 'keep') return { outcome: 'kept_dirty' };
        let saved: { savedRef: string; savedCommit: string; leftOut: LeftOut[] } | null = null;
        // A trigger that saves looks for ignored files to keep (not rebuilt) in a clean clone too:
        // its save then finds nothing and answers clean, at the cost of one more trip.
        if (slot.dirty !== 'clean' || req.dirty === 'save') {
          let unsaved = false;
          const made = await saveRemoteWork(target, {
            repoPath,
            hostRepository: w.sourcePath,
            ...saveOfRemoval(req.trigger, req.ownerTaskId, w.repositoryId),
            rebuildable: await rebuildableOf(pool, w.repositoryId),
          }).catch((err: unknown) => {
            if (err instanceof SshRefusal) throw err;
            logger.warn(
              { err: err instanceof Error ? err.message : err, repositoryId: w.repositoryId },
              'saving remote uncommitted work failed',
            );
            if (!keepsWhenUnsaved(req.trigger))
              throw cleanupFailure('save_uncommitted_failed', 'uncommitted work could not be saved');
            unsaved = true;
            return null;
          });
          // An idle release gives the task back with the clone where it is (nothing removed).
          if (unsaved) return { outcome: 'kept_dirty', reason: 'save_failed' };
          if (made) {
            saved = { savedRef: made.ref, savedCommit: made.commit, leftOut: made.leftOut };
            await recordSavedWork(pool, {
              repositoryId: w.repositoryId,
              ref: made.ref,
              taskId: req.ownerTaskId,
              commit: made.commit,
              trigger: req.trigger ?? null,
              leftOut: made.leftOut,
            });
          }
        }
        // The branch's commits on the host before the clone goes: nothing of the agent's is lost.
        const back = await bringBranchBack(target, { repoPath, branch: w.branch, hostRepository: w.sourcePath });
        if (back === 'refused')
          throw cleanupFailure(
            'remote_branch_not_brought_back',
            'the remote task branch could not be brought back to the host repository',
          );
        const removed = await removeRemoteClone(target, {
          taskFolder,
          markerText: ownershipMarkerText(req.ownerTaskId, w.environmentId),
          repoPath,
          expectedBranch: w.branch,
          expectedHead: slot.head,
          savedCommit: saved?.savedCommit ?? null,
        });
        switch (removed) {
          case 'removed':
            return saved
              ? {
                  outcome: 'saved_and_removed',
                  savedRef: saved.savedRef,
                  savedCommit: saved.savedCommit,
                  ...(saved.leftOut.length ? { leftOut: saved.leftOut } : {}),
                }
              : { outcome: 'removed' };
          case 'already_gone':
            return { outcome: 'already_gone' };
          case 'dirty':
            // Changed since it was read: kept, as a dirty worktree is.
            if (req.dirty === 'keep') return { outcome: 'kept_dirty' };
            throw cleanupFailure('git_worktree_remove_failed', 'the remote clone changed while it was being removed');
          case 'not_a_directory':
            throw cleanupFailure('worktree_audit_not_directory', 'the remote clone is not a real directory');
          case 'not_a_checkout':
            throw cleanupFailure(
              'worktree_audit_unregistered',
              'the folder is not the git clone the inventory recorded',
            );
          case 'marker_mismatch':
            throw cleanupFailure('worktree_audit_foreign_marker', 'the ownership marker does not name the task');
          case 'other_branch':
          case 'moved':
            throw cleanupFailure('worktree_audit_other_branch', 'the remote clone moved while it was being removed');
          default:
            throw cleanupFailure('internal', 'the removal on the target answered something unknown');
        }
      } catch (err) {
        throw classified(err);
      }
    },

    /** A deleted task's run folders on the SSH targets its agents ran on. */
    async removeTaskRuns(input: { taskId: string; sshTargetIds: string[] }): Promise<void> {
      for (const id of new Set(input.sshTargetIds)) {
        try {
          const target = await loadSshTarget(pool, id);
          await removeRemoteTaskRuns(target, { runsDir: remoteRunsDir(target), taskId: input.taskId });
        } catch (err) {
          throw classified(err);
        }
      }
    },

    /** The task folder on the target, with its marker, once nothing else is in it. */
    async removeTaskFolder(input: {
      sshTargetId?: string | null;
      taskFolder: string;
      ownerTaskId: string;
      environmentId: string;
    }): Promise<boolean> {
      try {
        const target = await loadSshTarget(pool, input.sshTargetId);
        return (
          (await removeRemoteTaskFolderIfEmpty(target, {
            taskFolder: input.taskFolder,
            markerText: ownershipMarkerText(input.ownerTaskId, input.environmentId),
          })) !== 'kept'
        );
      } catch (err) {
        throw classified(err);
      }
    },
  };
}
