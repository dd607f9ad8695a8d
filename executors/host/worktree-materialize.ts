/**
 * Materialization and its exact undo, on the host that holds the workspace. Git admin
 * operations on one repository are serialized across processes (db/locks.ts).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { diskIsLow, isNoSpaceFailure } from '../../domain/disk';
import { outageOf } from '../../domain/outage';
import { isMaterializer, releaseKeptMaterialization } from '../../db/environments';
import { withRepositoryLock } from '../../db/locks';
import type { LaunchPlan, MaterializedSlot, SlotPlan } from '../../domain/launch';
import { OWNERSHIP_MARKER_FILE, ownershipMarkerText } from '../../domain/task-layout';
import { bringObjectsHome } from '../../git/agent-objects-home';
import { discardObjectStore } from '../../git/agent-objects';
import { addWorktree, listWorktrees, removeWorktree, worktreeIdentity } from '../../git/worktrees';
import { branchCommit, branchCommits, branchRef, deleteBranchIfAt, recreateMissingBranch } from '../../git/branches';
import { gitAt } from '../../git/git';
import { openToOwner } from '../../git/owner-access';
import type { WorkspaceOperations } from '../executor';
import type { ActivityDeps } from '../support/deps';
import { materializationFailure, typedFailure } from '../support/failures';
import {
  markerOwnedBy,
  pathExists,
  readMarker,
  writeMarker,
  rmdirIfEmpty,
  sameRealPath,
  unlinkIfPresent,
} from './workspace-fs';
import { filesystemSpace } from './disk';

/** A worktree git added but could not read back: the launch made it, so its undo removes it. */
class UnreadableWorktree extends Error {
  constructor(readonly slot: MaterializedSlot) {
    super('the new worktree is not readable');
  }
}

export function worktreeWorkspace(deps: ActivityDeps): Pick<WorkspaceOperations, 'materialize' | 'discard'> {
  const { pool, config, logger } = deps;
  const gitOptions = { binary: config.gitBinary };

  async function materializeSlot(slot: SlotPlan): Promise<MaterializedSlot> {
    const made = await withRepositoryLock(
      pool,
      slot.repositoryId,
      async () => {
        const git = gitAt(slot.sourcePath, gitOptions);
        // Idempotent after a crash: a worktree this launch already registered is adopted. Only an
        // occupied slot path can be one (a fresh launch skips listing the worktrees).
        const occupied = await pathExists(slot.worktreePath);
        const existing = occupied ? await findRegistered(await listWorktrees(git), slot.worktreePath) : null;
        // A worktree found registered at the slot path is adopted, with its branch: neither is this
        // step's to undo (an earlier attempt's, or one an archive kept dirty and unarchive found).
        let createdBranch = false;
        const createdWorktree = existing === null;
        if (existing) {
          if (existing.branch !== slot.branch) throw new Error('another worktree occupies the slot path');
          // Registered on a branch that is gone: made again where the worktree's HEAD last was, or refused typed.
          if (!(await branchCommit(git, slot.branch))) {
            const restored = await recreateMissingBranch(git, slot.worktreePath, slot.branch, gitOptions);
            if (!restored) throw typedFailure('workspace_reuse_unsafe', { reason: 'branch_missing' });
            logger.warn(
              { repositoryId: slot.repositoryId },
              "a registered worktree's branch was gone; made again at its last HEAD",
            );
          }
        } else {
          if (occupied) throw new Error('the slot path is occupied');
          // The common case in one git process: create the task branch at the base and check it out.
          // git refuses, before it makes anything, when the branch exists (a create-only ref update)
          // or the base does not; only then are both read, to check out an existing branch as it is.
          const refusal = slot.createBranch
            ? await addWorktree(git, slot.worktreePath, slot.branch, branchRef(slot.baseBranch)).then(
                () => null,
                (err: unknown) => err,
              )
            : null;
          if (slot.createBranch && refusal === null) {
            createdBranch = true;
          } else {
            if (refusal && (await pathExists(slot.worktreePath))) throw refusal; // git failed after it began: the undo decides
            // A checkout that found no room: git made the branch (it refuses an existing one
            // before it writes anything) and removed its half worktree; the branch goes too.
            if (refusal && isNoSpaceFailure(refusal)) {
              const base = await branchCommit(git, slot.baseBranch);
              if (base && (await branchCommit(git, slot.branch)) === base)
                await deleteBranchIfAt(git, slot.branch, base);
              throw refusal;
            }
            const commits = await branchCommits(git, [slot.branch, slot.baseBranch]);
            if (!commits.has(slot.branch)) {
              if (!slot.createBranch) throw new Error('the requested branch does not exist');
              if (!commits.has(slot.baseBranch)) throw new Error('the base branch does not exist');
              throw refusal; // both refs are fine: git failed for another reason
            }
            // An existing branch is checked out as it is: never moved, never reset.
            await addWorktree(git, slot.worktreePath, slot.branch, null);
          }
        }
        // What this launch added, and what it and its agents add later under the repository's .git,
        // stays its owner's to write. Once the worktree is there: a refused launch changes nothing.
        if ((await openToOwner(path.join(slot.sourcePath, '.git'))) === 'unsupported')
          logger.warn(
            { repositoryId: slot.repositoryId },
            "the repository's owner could not be given what the service adds to its .git (no setfacl, or no ACLs there): their own git may meet folders it cannot write",
          );
        return { createdBranch, createdWorktree };
      },
      undefined,
      logger,
    );
    // Read once the lock is let go: the worktree is registered and its own admin folder and HEAD
    // are its alone (another launch's add or a removal of another worktree of the repository does
    // not touch them), and 200 launches at once on one repository wait for the lock in turn, so
    // one git process less under it shortens every launch's wait (the bare floor reads it the same
    // way, outside its turn). Why git could not read it is logged.
    const identity = await worktreeIdentity(slot.worktreePath, gitOptions, (err) =>
      logger.warn({ err, repositoryId: slot.repositoryId }, 'git could not read the new worktree'),
    );
    if (!identity) {
      // What this launch made is undone with the rest: the slot goes to the undo without an
      // identity or a head (its branch is then deleted only while it is at its base's commit).
      throw new UnreadableWorktree({
        repositoryId: slot.repositoryId,
        worktreePath: slot.worktreePath,
        worktreeId: null,
        branch: slot.branch,
        headCommit: '',
        ...made,
      });
    }
    return {
      repositoryId: slot.repositoryId,
      worktreePath: slot.worktreePath,
      worktreeId: identity.id,
      branch: slot.branch,
      headCommit: identity.head,
      ...made,
    };
  }

  async function findRegistered(entries: Awaited<ReturnType<typeof listWorktrees>>, worktreePath: string) {
    for (const entry of entries) if (await sameRealPath(entry.path, worktreePath)) return entry;
    return null;
  }

  /**
   * A first launch undoes its work only while it is still the environment's materializer. One
   * that was declared gone (its workflow terminated while this step ran on) and re-elected
   * leaves its worktrees to the new materializer, which adopts them under the same lock.
   */
  const mayUndo = async (plan: LaunchPlan): Promise<boolean> =>
    plan.role !== 'materialized' || isMaterializer(pool, plan.environmentId, plan.sessionId);

  /**
   * Removes exactly what a launch made: its worktrees, the branches it created (unless they moved,
   * or a worktree still has them checked out), its marker, its empty folder. A worktree git will not
   * remove (an agent of a cancelled launch wrote into it) is kept with its branch and its
   * marker, and a published first launch then leaves its environment `released` with that
   * worktree's row, as an archive that kept a dirty worktree does: visible, cleaned by the next
   * cleanup, adopted by the next launch. Answers the repositories whose worktree was kept.
   */
  async function discard(plan: LaunchPlan, made: MaterializedSlot[]): Promise<string[]> {
    const kept: string[] = [];
    for (const slot of [...made].reverse()) {
      const source = plan.slots.find((s) => s.repositoryId === slot.repositoryId)!;
      await withRepositoryLock(
        pool,
        slot.repositoryId,
        async () => {
          if (!(await mayUndo(plan))) return;
          const git = gitAt(source.sourcePath, gitOptions);
          // Only a worktree this launch created, and never with --force: git keeps a dirty one.
          if (slot.createdWorktree && (await findRegistered(await listWorktrees(git), slot.worktreePath))) {
            // An agent that started meanwhile added to its task store: home first, or the worktree stays.
            const home = await bringObjectsHome(config.agentRoot, slot.worktreePath, config.gitBinary).then(
              () => true,
              (err: unknown) => (
                logger.warn(
                  { err, repositoryId: slot.repositoryId },
                  'undo kept a worktree whose agent objects could not be brought home',
                ),
                false
              ),
            );
            if (home) {
              await removeWorktree(git, slot.worktreePath, false).then(
                () => discardObjectStore(config.agentRoot, slot.worktreePath),
                (err) =>
                  logger.warn(
                    { err, repositoryId: slot.repositoryId },
                    'undo kept a worktree git would not remove cleanly',
                  ),
              );
            }
          }
          if (!slot.createdWorktree) return;
          const listed = await listWorktrees(git);
          if (await findRegistered(listed, slot.worktreePath)) kept.push(slot.repositoryId);
          // Never a branch that a worktree has checked out (as `git branch -d` refuses it): the kept one's, or any other's.
          if (listed.some((entry) => entry.branch === slot.branch)) return;
          // A slot whose head was never read: its branch holds nothing of its own only while it is
          // where its base is (it was created there a moment ago).
          const createdAt = slot.headCommit || (await branchCommit(git, source.baseBranch));
          if (slot.createdBranch && createdAt && (await branchCommit(git, slot.branch)) === createdAt) {
            await deleteBranchIfAt(git, slot.branch, createdAt);
          }
        },
        undefined,
        logger,
      );
    }
    if (!(await mayUndo(plan))) return kept;
    if (kept.length > 0) {
      // The marker vouches for the kept worktree; the environment keeps its row.
      if (plan.role === 'materialized') {
        const removed = made.filter((slot) => !kept.includes(slot.repositoryId)).map((slot) => slot.repositoryId);
        if (
          !(await releaseKeptMaterialization(pool, {
            environmentId: plan.environmentId,
            materializerSessionId: plan.sessionId,
            removedRepositoryIds: removed,
          }))
        ) {
          logger.warn(
            { environmentId: plan.environmentId },
            'undo kept a worktree of an environment it had not published; the orphan sweep judges it',
          );
        }
      }
      return kept;
    }
    const marker = await readMarker(plan.taskFolder);
    // An undo that cannot remove its marker or folder leaves them (the orphan sweep judges them
    // later) and says so; it never hides the launch's own failure behind its own.
    try {
      if (marker && marker !== 'unreadable' && marker.environmentId === plan.environmentId)
        await unlinkIfPresent(path.join(plan.taskFolder, OWNERSHIP_MARKER_FILE));
      await rmdirIfEmpty(plan.taskFolder); // only when empty: never a recursive delete
    } catch (err) {
      logger.warn({ err, environmentId: plan.environmentId }, 'undo left the task folder in place');
    }
    return kept;
  }

  return {
    async materialize(plan: LaunchPlan): Promise<MaterializedSlot[]> {
      // A low disk is refused before anything is made [R6.11]; git would meet it half-way.
      if (diskIsLow(await filesystemSpace(config.workspaceRoot), config.minFreeDisk))
        throw typedFailure('host_disk_low');
      const made: MaterializedSlot[] = [];
      const folderExisted = await pathExists(plan.taskFolder);
      try {
        // Written only where there is none, or this task's: an unreadable one may be another task's.
        const marker = await readMarker(plan.taskFolder);
        if (marker !== null && !markerOwnedBy(marker, plan.environmentTaskId))
          throw new Error('the task folder belongs to another task, or its marker cannot be read');
        await mkdir(plan.taskFolder, { recursive: true });
        await writeMarker(plan.taskFolder, ownershipMarkerText(plan.environmentTaskId, plan.environmentId));
        for (const slot of plan.slots) made.push(await materializeSlot(slot));
        return made;
      } catch (err) {
        if (err instanceof UnreadableWorktree) made.push(err.slot);
        // The database went away (the repository lock with it): the step is tried again once
        // it answers, and that try adopts what this one made. Nothing to undo.
        if (outageOf(err) === 'database') throw err;
        logger.warn(
          { err, environmentId: plan.environmentId, sessionId: plan.sessionId },
          'materialization failed; removing what this launch made',
        );
        await discard(plan, made);
        if (!folderExisted && (await mayUndo(plan)))
          await rmdirIfEmpty(plan.taskFolder).catch((undoErr: unknown) =>
            logger.warn({ err: undoErr, environmentId: plan.environmentId }, 'undo left the task folder in place'),
          );
        // A refusal with its own reason (a registered worktree that cannot be reused) says so.
        if (err instanceof ApplicationFailure && err.type === 'workspace_reuse_unsafe') throw err;
        // The disk filled during the materialization: undone like any failure, and said so [R6.11].
        throw materializationFailure(err);
      }
    },

    async discard(plan: LaunchPlan, made: MaterializedSlot[]): Promise<void> {
      await discard(plan, made);
    },
  };
}
