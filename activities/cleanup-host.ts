/**
 * The host side of cleanup: stop the task's agents, then remove each worktree only after an
 * audit (real directory, registered on the recorded branch, marker naming the task). Something
 * already gone counts as done; failures are classified and thrown, never swallowed [R6.4, R6.6].
 */
import { ApplicationFailure } from '@temporalio/common';
import { readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { findExecution } from '../db/executions';
import { recordSavedWork } from '../db/saved-work';
import { dropSpawnIntent } from '../db/spawn-intents';
import type { CleanupErrorClass, SnapshotProcess, SnapshotWorktree, WorktreeOutcome } from '../domain/cleanup';
import { OWNERSHIP_MARKER_FILE, ownershipMarkerText } from '../domain/task-layout';
import {
  deleteBranchIfAt,
  headAndBranch,
  pruneWorktrees,
  removeWorktree,
  saveUncommittedWork,
  worktreeDirtiness,
} from '../git/git';
import { bringObjectsHome, discardObjectStore } from '../git/agent-objects';
import { repositoryTurns, type StepOutcome, type Turn } from './repository-turns';
import type { ActivityDeps } from './deps';
import { withHeartbeat } from './heartbeat';
import { sshCleanupActivities } from './ssh-cleanup';
import { stopRecordedAgent } from './agent-process';
import { findMarkedGroup, isSameProcess, stopMarkedGroup } from './process-identity';
import {
  isRealDirectory,
  lstatIfPresent,
  markerOwnedBy,
  pathExists,
  readMarker,
  rmdirIfEmpty,
  unlinkIfPresent,
} from './workspace-fs';

const failure = (type: CleanupErrorClass, message: string) =>
  ApplicationFailure.create({ type, message, nonRetryable: true });

const savedWorkRef = (taskId: string, repositoryId: string): string =>
  `refs/task-workspaces/saved/${taskId}/${repositoryId}`;

export interface RemovalRequest {
  worktree: SnapshotWorktree;
  ownerTaskId: string;
  taskFolder: string | null;
  /** What to do with uncommitted work: keep the worktree (archive, no consent) or save it on a hidden ref, then remove. */
  dirty: 'keep' | 'save';
}

export function cleanupHostActivities(deps: ActivityDeps) {
  const { pool, config, logger } = deps;
  const gitOptions = { binary: config.gitBinary };
  const remote = sshCleanupActivities(deps);

  const turns = repositoryTurns(pool, gitOptions, logger);

  /** `worktreeDirtiness`, with the unreadable case logged (it counts as dirty). */
  async function dirtyStatus(worktreePath: string, repositoryId: string): Promise<'clean' | 'dirty' | 'unreadable'> {
    const found = await worktreeDirtiness(worktreePath, gitOptions);
    if (found.state === 'unreadable')
      logger.warn({ err: found.err, repositoryId }, 'git status unreadable; the worktree counts as dirty');
    return found.state;
  }

  const removeFailed = (err: unknown, repositoryId: string) => {
    logger.warn({ err, repositoryId }, 'git worktree remove failed');
    return failure('git_worktree_remove_failed', 'git worktree remove failed');
  };

  /** The task's recorded agents that still run are stopped, each through the one stop; one that will not stop fails the attempt. */
  async function stopAll(processes: SnapshotProcess[]): Promise<number> {
    let stopped = 0;
    for (const p of processes) {
      if (p.sshTargetId) {
        stopped += await remote.stopRemoteProcesses([p]);
        continue;
      }
      if (!(await isSameProcess(p.pid, p.processStartTime))) continue; // gone already, or the pid is another process now
      if (!(await stopRecordedAgent(pool, p, config.agentStopGraceMs)))
        throw failure('process_stop_failed', 'an agent process did not stop');
      stopped++;
    }
    return stopped;
  }

  /** Every host worktree's task store is brought home (issue 32); one that cannot be fails the attempt (retried) before anything is removed. */
  async function bringAgentObjectsHome(worktrees: SnapshotWorktree[]): Promise<void> {
    for (const w of worktrees) {
      if (!w.worktreePath || w.sshTargetId) continue;
      await bringObjectsHome(config.dataDir, w.worktreePath, config.gitBinary).catch((err: unknown) => {
        logger.warn({ err, repositoryId: w.repositoryId }, "an agent's objects could not be brought home");
        throw failure('agent_objects_not_home', "an agent's objects could not be brought into the repository");
      });
    }
  }

  return {
    async stopProcesses(processes: SnapshotProcess[]): Promise<number> {
      return stopAll(processes);
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
            stopped += await stopAll([
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
          throw failure('process_stop_failed', 'an agent process did not stop');
        await dropSpawnIntent(pool, intent.executionId);
      }
      return stopped;
    },

    /** A deleted task's agent logs (its log folder, and older per-session ones); never a session delete's doing. */
    async removeTaskLogs(input: { taskId: string; sessionIds: string[] }): Promise<void> {
      // An id names exactly one folder under the log root.
      for (const id of [input.taskId, ...input.sessionIds])
        if (/^[0-9a-f-]{36}$/.test(id)) await rm(path.join(config.logDir, id), { recursive: true, force: true });
    },

    /** Repositories whose worktree has uncommitted work (tracked or untracked), or whose status cannot be read. */
    async findDirtyWorktrees(worktrees: SnapshotWorktree[]): Promise<string[]> {
      // Clones on SSH targets are examined there.
      const dirty: string[] = await remote.findDirtyRemote(worktrees.filter((w) => w.sshTargetId));
      for (const w of worktrees) {
        if (!w.worktreePath || w.sshTargetId) continue;
        // Gone: nothing to lose. Not a directory: the audited removal refuses it. Not examinable: dirty.
        const found = await lstatIfPresent(w.worktreePath).catch((err: unknown) => {
          logger.warn({ err, repositoryId: w.repositoryId }, 'worktree path not examinable; it counts as dirty');
          return 'unreadable' as const;
        });
        if (found === null || (found !== 'unreadable' && !found.isDirectory())) continue;
        // What a sandboxed agent committed is read from the repository's own store (issue 32; an
        // attempt brings it home in cleanupOnHost first): one that cannot come home counts as dirty.
        const home =
          found !== 'unreadable' &&
          (await bringAgentObjectsHome([w]).then(
            () => true,
            () => false,
          ));
        if (!home || (await dirtyStatus(w.worktreePath, w.repositoryId)) !== 'clean') dirty.push(w.repositoryId);
      }
      return dirty;
    },

    async removeWorktreeAudited(
      req: RemovalRequest,
    ): Promise<{ outcome: WorktreeOutcome; savedRef?: string; savedCommit?: string }> {
      const w = req.worktree;
      if (!w.worktreePath || !w.worktreeId) return { outcome: 'inventory_only' };
      const worktreePath = w.worktreePath;
      const stillRegistered = (message: string) => async (turn: Turn) => {
        if (await turn.registeredNow(worktreePath)) throw failure('worktree_still_registered', message);
      };
      // In the repository's next turn, with the other removals waiting for it (one lock hold, shared listings).
      return withHeartbeat('remove-worktree', () =>
        turns.inTurn(
          w.repositoryId,
          w.sourcePath,
          async (turn): Promise<StepOutcome<{ outcome: WorktreeOutcome; savedRef?: string; savedCommit?: string }>> => {
            const git = turn.git;
            if (!(await pathExists(worktreePath))) {
              // The folder is gone: drop a stale registration and count it done.
              await pruneWorktrees(git).catch(() => {
                throw failure('git_prune_failed', 'git worktree prune failed');
              });
              turn.changed();
              await discardObjectStore(config.dataDir, worktreePath);
              return {
                value: { outcome: 'already_gone' },
                afterTurn: stillRegistered('a removed worktree is still registered'),
              };
            }
            // The audit: any doubt keeps the folder and fails the attempt, naming the reason. These
            // reasons are facts about the folder that no retry changes (domain/cleanup.ts sends the
            // job to an operator at once). (A worktree on a branch has that branch's commit as
            // HEAD, so the listing's HEAD is the branch's commit.)
            if (!(await isRealDirectory(worktreePath)))
              throw failure('worktree_audit_not_directory', 'the worktree path is not a real directory');
            const entry = await turn.registrationAt(worktreePath);
            // A prunable entry is a registration whose folder git no longer recognises (a copy put in its place).
            if (!entry || entry.prunable || !entry.head)
              throw failure('worktree_audit_unregistered', 'the folder is not a worktree registered with git');
            if (entry.branch !== w.branch)
              throw failure(
                'worktree_audit_other_branch',
                'the worktree is on another branch than the inventory recorded',
              );
            const marker = req.taskFolder ? await readMarker(req.taskFolder) : null;
            if (!markerOwnedBy(marker, req.ownerTaskId))
              throw failure('worktree_audit_foreign_marker', 'the ownership marker does not name the task');
            // The judgement holds for the HEAD it was made on [R6.6]: read again just before each
            // removal, a HEAD that moved (a commit, a detach: something the records do not know
            // writes there) keeps the folder and waits for an operator. A clean detached worktree
            // removed on the old judgement would take its commits with it.
            const judged = { head: entry.head, branch: w.branch };
            const stillJudged = async () => {
              const now = await headAndBranch(worktreePath, gitOptions);
              if (!now || now.head !== judged.head || now.branch !== judged.branch)
                throw failure('worktree_audit_head_moved', 'the worktree moved after the audit judged it');
            };
            await stillJudged();

            // Without --force git itself refuses a worktree with modified or untracked files (what
            // `status` shows and a save keeps; ignored files are neither), so a clean one is removed
            // in one git process and its status is read only on a refusal. Read after the task's
            // agents stopped: a consented delete saves exactly what is there, on a hidden ref, then
            // removes with force.
            let savedRef: string | undefined;
            let savedCommit: string | undefined;
            try {
              await removeWorktree(git, worktreePath, false);
            } catch (err) {
              // Kept when dirty, and when its status cannot be read (that is dirty too): never removed on a doubt.
              const status = await dirtyStatus(worktreePath, w.repositoryId);
              if (status === 'clean') throw removeFailed(err, w.repositoryId);
              if (req.dirty === 'keep') return { value: { outcome: 'kept_dirty' } };
              const ref = savedWorkRef(req.ownerTaskId, w.repositoryId);
              try {
                const commit = await saveUncommittedWork(
                  worktreePath,
                  ref,
                  `task-workspaces: uncommitted work of task ${req.ownerTaskId} saved before deletion`,
                  gitOptions,
                );
                if (commit) {
                  savedRef = ref;
                  savedCommit = commit;
                  // Listed from the moment the ref exists, before anything is removed.
                  await recordSavedWork(pool, { repositoryId: w.repositoryId, ref, taskId: req.ownerTaskId, commit });
                }
              } catch (saveErr) {
                logger.warn({ err: saveErr, repositoryId: w.repositoryId }, 'saving uncommitted work failed');
                throw failure('save_uncommitted_failed', 'uncommitted work could not be saved');
              }
              // Dirty, and nothing to save: git's refusal stands.
              if (savedRef === undefined) throw removeFailed(err, w.repositoryId);
              await stillJudged();
              await removeWorktree(git, worktreePath, true).catch((forceErr: unknown) => {
                throw removeFailed(forceErr, w.repositoryId);
              });
            } finally {
              turn.changed();
            }
            // Its task store was brought home before (cleanupOnHost): it goes with the worktree.
            await discardObjectStore(config.dataDir, worktreePath);
            // Verified gone once every removal of the turn ran, on one listing.
            return {
              value: savedRef ? { outcome: 'saved_and_removed', savedRef, savedCommit } : { outcome: 'removed' },
              afterTurn: stillRegistered('the worktree is still registered after removal'),
            };
          },
        ),
      );
    },

    bringAgentObjectsHome,

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
            throw failure('branch_cleanup_failed', 'the task branch could not be read');
          });
          if (!commit) return { value: 'deleted_merged' }; // already gone
          // A worktree still on the branch (kept because dirty) keeps it: read after this turn's removals.
          if ((await turn.current()).some((e) => e.branch === branch)) return { value: 'kept_unmerged' };
          if (!merged) return { value: 'kept_unmerged' };
          try {
            await deleteBranchIfAt(turn.git, branch, commit);
          } catch {
            throw failure('branch_cleanup_failed', 'the merged task branch could not be deleted');
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
        throw failure('worktree_audit_foreign_marker', 'the ownership marker does not name the task');
      }
      await writeFile(
        path.join(input.taskFolder, OWNERSHIP_MARKER_FILE),
        ownershipMarkerText(input.toTaskId, input.environmentId),
      );
    },

    /** The marker and the task folder go last, and only when nothing else is left in it. */
    async removeTaskFolder(input: { taskFolder: string; ownerTaskId: string }): Promise<boolean> {
      if (!(await pathExists(input.taskFolder))) return true;
      const entries = await readdir(input.taskFolder);
      // A kept (dirty) worktree keeps its folder and the marker that vouches for it.
      if (entries.some((e) => e !== OWNERSHIP_MARKER_FILE)) return false;
      // Another task's marker, or one that cannot be read (it may be another task's), keeps the folder.
      const marker = await readMarker(input.taskFolder);
      if (marker !== null && !markerOwnedBy(marker, input.ownerTaskId)) return false;
      // A marker that cannot be removed fails the attempt (retried), never passes as done.
      await unlinkIfPresent(path.join(input.taskFolder, OWNERSHIP_MARKER_FILE));
      return rmdirIfEmpty(input.taskFolder);
    },
  };
}
