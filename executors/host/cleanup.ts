/**
 * Cleanup of what is on this host (the worktree and local executors alike): the task's agents
 * stopped, what they added to their task stores brought home, the dirty worktrees found, the task
 * folder and its marker removed once empty, a deleted task's logs. Something already gone counts
 * as done; failures are classified and thrown, never swallowed [R6.4].
 */
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { SnapshotProcess, SnapshotWorktree } from '../../domain/cleanup-snapshot';
import { OWNERSHIP_MARKER_FILE } from '../../domain/task-layout';
import { bringObjectsHome } from '../../git/agent-objects-home';
import { worktreeDirtiness } from '../../git/worktree-status';
import type { CleanupOperations } from '../executor';
import type { ActivityDeps } from '../support/deps';
import { cleanupFailure } from '../support/failures';
import { stopRecordedAgent } from './agents';
import { isSameProcess } from './process-identity';
import { lstatIfPresent, markerOwnedBy, pathExists, readMarker, rmdirIfEmpty, unlinkIfPresent } from './workspace-fs';

/** `worktreeDirtiness`, with the unreadable case logged (it counts as dirty). */
export async function dirtyStatus(
  { config, logger }: ActivityDeps,
  worktreePath: string,
  repositoryId: string,
): Promise<'clean' | 'dirty' | 'unreadable'> {
  const found = await worktreeDirtiness(worktreePath, { binary: config.gitBinary });
  if (found.state === 'unreadable')
    logger.warn({ err: found.err, repositoryId }, 'git status unreadable; the worktree counts as dirty');
  return found.state;
}

export function hostCleanup(deps: ActivityDeps): Omit<CleanupOperations, 'removeAudited'> {
  const { pool, config, logger } = deps;

  /** Every worktree's task store is brought home; one that cannot be fails the attempt (retried) before anything is removed. */
  async function bringWorkHome(worktrees: SnapshotWorktree[]): Promise<void> {
    for (const w of worktrees) {
      if (!w.worktreePath) continue;
      await bringObjectsHome(config.agentRoot, w.worktreePath, config.gitBinary).catch((err: unknown) => {
        logger.warn({ err, repositoryId: w.repositoryId }, "an agent's objects could not be brought home");
        throw cleanupFailure('agent_objects_not_home', "an agent's objects could not be brought into the repository");
      });
    }
  }

  return {
    bringWorkHome,

    /** Each through the one stop; one that will not stop fails the attempt. */
    async stopProcesses(processes: SnapshotProcess[]): Promise<number> {
      let stopped = 0;
      for (const p of processes) {
        if (!(await isSameProcess(p.pid, p.processStartTime))) continue; // gone already, or the pid is another process now
        if (!(await stopRecordedAgent(pool, p, config.agentStopGraceMs)))
          throw cleanupFailure('process_stop_failed', 'an agent process did not stop');
        stopped++;
      }
      return stopped;
    },

    async findDirty(worktrees: SnapshotWorktree[]): Promise<string[]> {
      const dirty: string[] = [];
      for (const w of worktrees) {
        if (!w.worktreePath) continue;
        // Gone: nothing to lose. Not a directory: the audited removal refuses it. Not examinable: dirty.
        const found = await lstatIfPresent(w.worktreePath).catch((err: unknown) => {
          logger.warn({ err, repositoryId: w.repositoryId }, 'worktree path not examinable; it counts as dirty');
          return 'unreadable' as const;
        });
        if (found === null || (found !== 'unreadable' && !found.isDirectory())) continue;
        // What a sandboxed agent committed is read from the repository's own store (an
        // attempt brings it home in cleanupOnHost first): one that cannot come home counts as dirty.
        const home =
          found !== 'unreadable' &&
          (await bringWorkHome([w]).then(
            () => true,
            () => false,
          ));
        if (!home || (await dirtyStatus(deps, w.worktreePath, w.repositoryId)) !== 'clean') dirty.push(w.repositoryId);
      }
      return dirty;
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

    /** A deleted task's agent logs (its log folder, and older per-session ones); never a session delete's doing. */
    async removeTaskRuns(input: { taskId: string; sessionIds: string[] }): Promise<void> {
      // An id names exactly one folder under the log root.
      for (const id of [input.taskId, ...input.sessionIds])
        if (/^[0-9a-f-]{36}$/.test(id)) await rm(path.join(config.logDir, id), { recursive: true, force: true });
    },
  };
}
