/**
 * A host worktree's audited removal [R6.4, R6.6]: only after an audit (a real directory,
 * registered with git on the recorded branch, in a folder whose marker names the task), and only
 * on the HEAD the audit judged. Any doubt keeps the folder and fails classified; uncommitted work
 * is kept (archive) or saved on the task's hidden ref first (a consented delete).
 */
import { rebuildableOf } from '../../db/catalog';
import { recordSavedWork, workToRestore } from '../../db/saved-work';
import { keepsWhenUnsaved } from '../../domain/cleanup';
import { RESTORED_TRIGGERS, saveOfRemoval } from '../../domain/saved-work';
import { earlierSameSave } from '../../git/saved-work-ref';
import { headAndBranch } from '../../git/checkout';
import { pruneWorktrees, removeWorktree } from '../../git/worktrees';
import { holdsIgnoredWork, saveWorkOnRef, type LeftOut } from '../../git/saved-work';
import { discardObjectStore } from '../../git/agent-objects';
import type { RemovalOutcome, RemovalRequest } from '../executor';
import { dirtyStatus } from './cleanup';
import { repositoryTurns, type StepOutcome, type Turn } from './repository-turns';
import { isRealDirectory, markerOwnedBy, pathExists, readMarker } from './workspace-fs';
import type { ActivityDeps } from '../support/deps';
import { cleanupFailure } from '../support/failures';
import { withHeartbeat } from '../support/heartbeat';

export function worktreeRemoval(deps: ActivityDeps): (req: RemovalRequest) => Promise<RemovalOutcome> {
  const { pool, config, logger } = deps;
  const gitOptions = { binary: config.gitBinary };
  const turns = repositoryTurns(pool, gitOptions, logger);

  const removeFailed = (err: unknown, repositoryId: string) => {
    logger.warn({ err, repositoryId }, 'git worktree remove failed');
    return cleanupFailure('git_worktree_remove_failed', 'git worktree remove failed');
  };

  return async function removeAudited(req: RemovalRequest): Promise<RemovalOutcome> {
    const w = req.worktree;
    if (!w.worktreePath || !w.worktreeId) return { outcome: 'inventory_only' };
    const worktreePath = w.worktreePath;
    const stillRegistered = (message: string) => async (turn: Turn) => {
      if (await turn.registeredNow(worktreePath)) throw cleanupFailure('worktree_still_registered', message);
    };
    // In the repository's next turn, with the other removals waiting for it (one lock hold, shared listings).
    return withHeartbeat('remove-worktree', () =>
      turns.inTurn(w.repositoryId, w.sourcePath, async (turn): Promise<StepOutcome<RemovalOutcome>> => {
        const git = turn.git;
        if (!(await pathExists(worktreePath))) {
          // The folder is gone: drop a stale registration and count it done.
          await pruneWorktrees(git).catch(() => {
            throw cleanupFailure('git_prune_failed', 'git worktree prune failed');
          });
          turn.changed();
          await discardObjectStore(config.agentRoot, worktreePath);
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
          throw cleanupFailure('worktree_audit_not_directory', 'the worktree path is not a real directory');
        const entry = await turn.registrationAt(worktreePath);
        // A prunable entry is a registration whose folder git no longer recognises (a copy put in its place).
        if (!entry || entry.prunable || !entry.head)
          throw cleanupFailure('worktree_audit_unregistered', 'the folder is not a worktree registered with git');
        if (entry.branch !== w.branch)
          throw cleanupFailure(
            'worktree_audit_other_branch',
            'the worktree is on another branch than the inventory recorded',
          );
        const marker = req.taskFolder ? await readMarker(req.taskFolder) : null;
        if (!markerOwnedBy(marker, req.ownerTaskId))
          throw cleanupFailure('worktree_audit_foreign_marker', 'the ownership marker does not name the task');
        // The judgement holds for the HEAD it was made on [R6.6]: read again just before each
        // removal, a HEAD that moved (a commit, a detach: something the records do not know
        // writes there) keeps the folder and waits for an operator. A clean detached worktree
        // removed on the old judgement would take its commits with it.
        const judged = { head: entry.head, branch: w.branch };
        const stillJudged = async () => {
          const now = await headAndBranch(worktreePath, gitOptions);
          if (!now || now.head !== judged.head || now.branch !== judged.branch)
            throw cleanupFailure('worktree_audit_head_moved', 'the worktree moved after the audit judged it');
        };
        await stillJudged();

        // Without --force git itself refuses a worktree with modified or untracked files (what
        // `status` shows and a save keeps; ignored files are neither), so a clean one is removed
        // in one git process and, when work is kept (archive), its status is read only on a
        // refusal, as it is when a consented delete saves (its worktrees are mostly clean: a
        // status first would cost each of them a pass). An idle release releases worktrees with
        // work in them: its status is read first, once, and a dirty worktree is saved, then
        // removed with force, never first sent to a removal git would refuse after reading every
        // file again; a clean one is still removed by git's own check. Read after the task's
        // agents stopped, on the HEAD judged above.
        let savedRef: string | undefined;
        let savedCommit: string | undefined;
        let leftOut: LeftOut[] | undefined;
        // A trigger that saves keeps ignored files too, but those rebuilt (domain/rebuildable.ts):
        // git's refusal does not see them, so such a worktree goes the save's way however clean.
        const rebuildable = req.dirty === 'save' ? await rebuildableOf(pool, w.repositoryId) : null;
        const ignoredWork = rebuildable !== null && (await holdsIgnoredWork(worktreePath, gitOptions, rebuildable));
        // Unreadable counts as dirty: never removed on a doubt.
        const releases = req.dirty === 'save' && RESTORED_TRIGGERS.includes(req.trigger!);
        const judgedDirty =
          ignoredWork || (releases && (await dirtyStatus(deps, worktreePath, w.repositoryId)) !== 'clean');
        try {
          let refusal: unknown = null;
          if (!judgedDirty)
            refusal = await removeWorktree(git, worktreePath, false, entry.locked).then(
              () => null,
              (err: unknown) => err ?? new Error('git worktree remove failed'),
            );
          if (judgedDirty || refusal !== null) {
            // Kept when dirty, and when its status cannot be read (that is dirty too).
            const status = judgedDirty ? 'dirty' : await dirtyStatus(deps, worktreePath, w.repositoryId);
            if (status === 'clean') throw removeFailed(refusal, w.repositoryId);
            if (req.dirty === 'keep') return { value: { outcome: 'kept_dirty' } };
            try {
              const { refFor, message } = saveOfRemoval(req.trigger, req.ownerTaskId, w.repositoryId);
              const made = await saveWorkOnRef(worktreePath, refFor, message, gitOptions, rebuildable ?? undefined);
              // A release retried after a crash between its save and the removal saves the same work once.
              const earlier =
                made && RESTORED_TRIGGERS.includes(req.trigger!)
                  ? await earlierSameSave(git, made, await workToRestore(pool, req.ownerTaskId, [w.repositoryId]))
                  : null;
              const saved = made && earlier ? { ...made, ...earlier } : made;
              if (saved) {
                savedRef = saved.ref;
                savedCommit = saved.commit;
                leftOut = saved.leftOut;
                // Listed from the moment the ref exists, before anything is removed.
                await recordSavedWork(pool, {
                  repositoryId: w.repositoryId,
                  ref: saved.ref,
                  taskId: req.ownerTaskId,
                  commit: saved.commit,
                  trigger: req.trigger ?? null,
                  leftOut: saved.leftOut,
                });
              }
            } catch (saveErr) {
              logger.warn({ err: saveErr, repositoryId: w.repositoryId }, 'saving uncommitted work failed');
              // An idle release gives the task back with the worktree where it is (nothing removed).
              if (keepsWhenUnsaved(req.trigger)) return { value: { outcome: 'kept_dirty', reason: 'save_failed' } };
              throw cleanupFailure('save_uncommitted_failed', 'uncommitted work could not be saved');
            }
            // Dirty, and nothing to save: kept, as git's refusal keeps it.
            if (savedRef === undefined)
              throw removeFailed(refusal ?? new Error('a dirty worktree with nothing to save'), w.repositoryId);
            await stillJudged();
            await removeWorktree(git, worktreePath, true).catch((forceErr: unknown) => {
              throw removeFailed(forceErr, w.repositoryId);
            });
          }
        } finally {
          turn.changed();
        }
        // Its task store was brought home before (cleanupOnHost): it goes with the worktree.
        await discardObjectStore(config.agentRoot, worktreePath);
        // Verified gone once every removal of the turn ran, on one listing.
        return {
          value: savedRef
            ? { outcome: 'saved_and_removed', savedRef, savedCommit, ...(leftOut?.length ? { leftOut } : {}) }
            : { outcome: 'removed' },
          afterTurn: stillRegistered('the worktree is still registered after removal'),
        };
      }),
    );
  };
}
