/**
 * The `ssh` executor's workspace steps on the host whose worker talks to the target: make the
 * remote clones of a first launch (or a transition), their exact undo, and attach's read-only
 * validation. Host git inspection does not apply to a remote workspace: the target's own answer
 * (over SSH, one round trip) and the inventory are the authority. An unreachable target is
 * `ssh_target_unavailable` (nothing was changed, a retry may help), a changed host key
 * `ssh_host_key_mismatch`; neither ever leads to a new clone.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { LaunchPlan, MaterializedSlot, ValidationProblem } from '../../domain/launch';
import { ownershipMarkerText, parseOwnershipMarker } from '../../domain/task-layout';
import type { Db } from '../../db/pool';
import { isMaterializer } from '../../db/environments';
import type { WorkspaceOperations } from '../executor';
import { getSshTarget } from '../../db/ssh-targets';
import { SshRefusal, type SshTarget } from '../../ssh/connection';
import {
  discardRemoteSlots,
  materializeRemoteSlot,
  readRemoteWorkspace,
  type RemoteSlotFacts,
} from '../../ssh/remote-workspace';
import type { ActivityDeps } from '../support/deps';
import { typedFailure } from '../support/failures';

/** Whether a marker's text names the task (any environment of it: a handed-over marker names its new owner). */
export const markerNames = (text: string | null, taskId: string): boolean =>
  parseOwnershipMarker(text)?.taskId === taskId;

/**
 * The one audit of a recorded clone, from what the target said of it: a real directory, the git
 * top level at its recorded path, on its recorded branch, in a folder whose marker names the
 * task. Attach refuses on any problem; cleanup keeps the clone and names it (`gone`: nothing to do).
 */
export function remoteCloneProblem(
  slot: RemoteSlotFacts,
  recorded: { path: string; branch: string },
  marker: string | null,
  taskId: string,
): 'gone' | 'not_a_directory' | 'not_registered' | 'branch_mismatch' | 'marker_mismatch' | null {
  if (!slot.exists) return 'gone';
  if (!slot.realDirectory) return 'not_a_directory';
  if (slot.toplevel !== recorded.path) return 'not_registered';
  if (slot.branch !== recorded.branch) return 'branch_mismatch';
  if (!markerNames(marker, taskId)) return 'marker_mismatch';
  return null;
}

/** The target a plan or a row names; one that is no longer registered cannot be reached. */
export async function loadSshTarget(pool: Db, id: string | null | undefined): Promise<SshTarget> {
  const target = id ? await getSshTarget(pool, id) : null;
  if (!target) throw typedFailure('ssh_target_unavailable', { reason: 'target_unknown' });
  return target;
}

/** A transport refusal as the typed outcome it is; anything else passes on unchanged. */
export function typedSsh(err: unknown): unknown {
  return err instanceof SshRefusal ? typedFailure(err.code, { reason: err.reason }) : err;
}

export function sshWorkspace({ pool, logger }: ActivityDeps): WorkspaceOperations {
  /** Removes exactly what a launch made on its target (a clone only while clean and where it was made); the marker and folder only when empty. */
  async function discardRemote(plan: LaunchPlan, made: MaterializedSlot[]): Promise<void> {
    const slots = made
      .filter((m) => m.createdWorktree)
      .map((m) => ({ repoPath: m.worktreePath, branch: m.branch, headCommit: m.headCommit }));
    try {
      const target = await loadSshTarget(pool, plan.sshTargetId);
      const outcome = await discardRemoteSlots(target, {
        taskFolder: plan.taskFolder,
        markerText: ownershipMarkerText(plan.environmentTaskId, plan.environmentId),
        slots,
      });
      if (outcome.kept > 0)
        logger.warn(
          { environmentId: plan.environmentId, kept: outcome.kept },
          'undo kept remote clones that changed since they were made',
        );
    } catch (err) {
      // A target that does not answer cannot be undone on now: the undo never hides the launch's
      // own failure behind its own. What it made stays, known to nobody but this log, only when
      // the target went away after it made something (then the clones are left for an operator).
      if (!(err instanceof SshRefusal) && !(err instanceof ApplicationFailure)) throw err;
      if (slots.length > 0)
        logger.warn(
          {
            environmentId: plan.environmentId,
            clones: slots.length,
            reason: err instanceof SshRefusal ? err.reason : err.type,
          },
          'undo could not reach the target; its clones are left for an operator',
        );
    }
  }

  return {
    /** Only while this launch is still the environment's materializer (executors/host/worktree-materialize.ts says why). */
    async discard(plan: LaunchPlan, made: MaterializedSlot[]): Promise<void> {
      if (plan.role === 'materialized' && !(await isMaterializer(pool, plan.environmentId, plan.sessionId))) return;
      await discardRemote(plan, made);
    },

    /**
     * One clone per repository under the task folder on the target, each from a bundle of the
     * host repository (nothing is pushed anywhere, the target needs no git server). A failure
     * removes what this launch made there before it fails.
     */
    async materialize(plan: LaunchPlan): Promise<MaterializedSlot[]> {
      const target = await loadSshTarget(pool, plan.sshTargetId);
      const made: MaterializedSlot[] = [];
      try {
        for (const slot of plan.slots) {
          const clone = await materializeRemoteSlot(target, {
            taskFolder: plan.taskFolder,
            markerText: ownershipMarkerText(plan.environmentTaskId, plan.environmentId),
            slot: {
              repoPath: slot.worktreePath,
              branch: slot.branch,
              baseBranch: slot.baseBranch,
              createBranch: slot.createBranch,
              sourcePath: slot.sourcePath,
            },
          });
          made.push({
            repositoryId: slot.repositoryId,
            worktreePath: slot.worktreePath,
            worktreeId: null,
            branch: slot.branch,
            headCommit: clone.headCommit,
            createdBranch: clone.createdBranch,
            createdWorktree: clone.createdClone,
          });
        }
        return made;
      } catch (err) {
        logger.warn(
          {
            err: err instanceof SshRefusal ? err.reason : err,
            environmentId: plan.environmentId,
            sessionId: plan.sessionId,
          },
          'remote materialization failed; removing what this launch made',
        );
        if (made.length > 0)
          await discardRemote(plan, made).catch((undoErr: unknown) =>
            logger.warn(
              { err: undoErr, environmentId: plan.environmentId },
              'undo on the target failed; the clones are left for an operator',
            ),
          );
        if (err instanceof SshRefusal) throw typedSsh(err);
        throw typedFailure('workspace_materialization_failed');
      }
    },

    /**
     * Attach on a target, read-only: the task folder's marker names the task, the workspace is a
     * real directory, each recorded clone is a real directory, a git top level, on the recorded
     * branch. Anything else refuses `workspace_reuse_unsafe` with nothing touched.
     */
    async validate(plan: LaunchPlan): Promise<void> {
      const target = await loadSshTarget(pool, plan.sshTargetId);
      const recorded = plan.slots.map((slot) => slot.recorded);
      const refuse = (problem: ValidationProblem) => {
        logger.warn(
          { environmentId: plan.environmentId, sessionId: plan.sessionId, problem },
          'remote workspace validation refused',
        );
        return typedFailure('workspace_reuse_unsafe', { problem });
      };
      if (recorded.some((r) => !r?.worktreePath || !r.worktreeBranch)) throw refuse('identity_missing');
      const facts = await readRemoteWorkspace(target, {
        taskFolder: plan.taskFolder,
        workspacePath: plan.workspacePath,
        repoPaths: recorded.map((r) => r!.worktreePath!),
        withDirty: false,
      }).catch((err: unknown) => {
        throw typedSsh(err);
      });
      if (!facts.workspaceIsRealDirectory) throw refuse('not_a_directory');
      for (const [i, slot] of facts.slots.entries()) {
        const problem = remoteCloneProblem(
          slot,
          { path: recorded[i]!.worktreePath!, branch: recorded[i]!.worktreeBranch! },
          facts.marker,
          plan.environmentTaskId,
        );
        if (problem) throw refuse(problem === 'gone' ? 'not_a_directory' : problem);
      }
      if (facts.slots.length === 0 && !markerNames(facts.marker, plan.environmentTaskId))
        throw refuse('marker_mismatch');
    },
  };
}
