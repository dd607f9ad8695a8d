/**
 * Finishing a task on the host that holds its repositories [R8]: what its workspace holds, the
 * plan of each repository's merge (commits made, no ref moved), and the base's moves, each by
 * compare-and-set under the repository's lock so merges into one base run one at a time. Every
 * step is idempotent: a move run again finds the base where it left it.
 */
import { findGitOperation, recordPlan, replacePlan } from '../db/git-operations';
import { withRepositoryLock } from '../db/locks';
import type { MergeStrategy, RepositoryPlan, TaskRepositorySource } from '../domain/merge';
import { bringCheckoutsForward, changedPaths, clearCheckouts } from '../git/base-checkouts';
import { branchRef, resolveCommit } from '../git/branches';
import { commitWorktreeWork } from '../git/commit-work';
import { gitAt } from '../git/git';
import { isAncestor, mergeGitAt, moveRef, planStrategy } from '../git/merge-commits';
import { rebaseTaskBranch, type RebaseAnswer } from '../git/rebase-worktree';
import type { ExecutorKind } from '../executors/executor';
import { executorsOf } from '../executors/registry';
import type { ActivityDeps } from '../executors/support/deps';
import { typedFailure } from '../executors/support/failures';
import { withHeartbeat } from '../executors/support/heartbeat';

/** What a repository's workspace holds now: the task head (after an agent's objects came home) and whether anything is uncommitted. */
export interface RepositoryState {
  repositoryId: string;
  taskHead: string | null;
  dirty: boolean;
}

export type PlanAnswer =
  | { kind: 'planned'; plan: RepositoryPlan }
  | { kind: 'nothing'; repositoryId: string }
  | { kind: 'conflicts'; repositoryId: string; conflicts: string[] }
  | { kind: 'not_fast_forward'; repositoryId: string }
  | { kind: 'base_checkout_dirty'; repositoryId: string };

export type MoveAnswer = 'moved' | 'stale' | 'base_checkout_dirty';

export type OneAnswer =
  | Exclude<PlanAnswer, { kind: 'planned' }>
  | { kind: 'uncommitted'; repositoryId: string }
  | { kind: 'merged'; plan: RepositoryPlan };

interface PlanInput {
  source: TaskRepositorySource;
  strategy: MergeStrategy;
  since: string | null;
  message: string;
}

export function mergeHostActivities(deps: ActivityDeps) {
  const { config, pool, logger } = deps;
  const binary = config.gitBinary;

  const executors = executorsOf(deps);

  /** The task branch brought home by the executor that holds its workspace, then read here. */
  async function stateOf(source: TaskRepositorySource): Promise<RepositoryState> {
    const { dirty } = await executors
      .at({ sshTargetId: source.sshTargetId, executorType: (source.executorType ?? 'worktree') as ExecutorKind })
      .bringBranchHome(source);
    const git = gitAt(source.sourcePath, { binary });
    const taskHead = source.taskBranch ? await resolveCommit(git, branchRef(source.taskBranch)) : null;
    return { repositoryId: source.repositoryId, taskHead, dirty };
  }

  /** One repository's plan on its base as it is now: made, nothing moved. */
  async function planOn(input: PlanInput, checkCheckouts = true): Promise<PlanAnswer> {
    const { source, strategy } = input;
    const repositoryId = source.repositoryId;
    const git = mergeGitAt(source.sourcePath, binary);
    const before = await resolveCommit(git, branchRef(source.baseBranch));
    const taskHead = source.taskBranch ? await resolveCommit(git, branchRef(source.taskBranch)) : null;
    if (!before) throw typedFailure('workspace_reuse_unsafe', { reason: 'base_branch_missing' });
    if (!taskHead) return { kind: 'nothing', repositoryId };
    const planned = await planStrategy(source.sourcePath, binary, config.gitIdentity, {
      strategy,
      base: before,
      head: taskHead,
      since: input.since,
      message: input.message,
    });
    if (planned.kind === 'nothing') return { kind: 'nothing', repositoryId };
    if (planned.kind === 'conflicts') return { kind: 'conflicts', repositoryId, conflicts: planned.conflicts };
    if (planned.kind === 'not_fast_forward') return { kind: 'not_fast_forward', repositoryId };
    // (A move right after, under the same hold of the lock, checks the checkouts itself.)
    if (checkCheckouts) {
      const changed = await changedPaths(source.sourcePath, before, planned.after, binary);
      if (!(await clearCheckouts(source.sourcePath, source.baseBranch, changed, binary)))
        return { kind: 'base_checkout_dirty', repositoryId };
    }
    const plan = { repositoryId, hostId: source.hostId, sourcePath: source.sourcePath, baseBranch: source.baseBranch };
    return { kind: 'planned', plan: { ...plan, before, taskHead, after: planned.after } };
  }

  /** The base moved by compare-and-set from the plan's commit, its checkouts following; the caller holds the lock. */
  async function moveUnderLock(plan: RepositoryPlan, reason: string): Promise<MoveAnswer> {
    const git = gitAt(plan.sourcePath, { binary });
    const ref = branchRef(plan.baseBranch);
    const current = await resolveCommit(git, ref);
    let folders: string[] | undefined;
    if (current !== plan.after) {
      if (current !== plan.before) return 'stale';
      const changed = await changedPaths(plan.sourcePath, plan.before, plan.after, binary);
      const clear = await clearCheckouts(plan.sourcePath, plan.baseBranch, changed, binary);
      if (!clear) return 'base_checkout_dirty';
      folders = clear;
      if ((await moveRef(git, ref, plan.after, plan.before, reason)) === 'stale') return 'stale';
    }
    await bringForwardOrPutBack(plan, git, folders);
    return 'moved';
  }

  /** Uncommitted work committed on the task branch (consented); never on an SSH target. */
  async function commitWork(source: TaskRepositorySource, message: string): Promise<string | null> {
    if (!source.worktreePath || !source.taskBranch) return null;
    // A clone on an SSH target is committed there by its agent: the service commits nothing on a target.
    if (source.sshTargetId)
      throw typedFailure('task_uncommitted_changes', {
        repositoryIds: [source.repositoryId],
        reason: 'commit_on_target_unsupported',
      });
    return commitWorktreeWork(source.worktreePath, source.taskBranch, {
      identity: config.gitIdentity,
      message,
      binary,
    });
  }

  return {
    async inspectTaskRepositories(sources: TaskRepositorySource[]): Promise<RepositoryState[]> {
      return withHeartbeat('merge-inspect', () => Promise.all(sources.map(stateOf)));
    },

    /** The task's uncommitted work committed on its branch (consented); the new head, or null when there was none. */
    async commitTaskWork(input: { source: TaskRepositorySource; message: string }): Promise<string | null> {
      return withHeartbeat('merge-commit-work', () => commitWork(input.source, input.message));
    },

    /** One repository's plan on its base as it is now: the commit the base would move to, made, nothing moved. */
    async planMergeRepository(input: PlanInput): Promise<PlanAnswer> {
      return withHeartbeat('merge-plan', () => planOn(input));
    },

    /**
     * The base moved from the plan's `before` to its `after`, in turn with every other merge into
     * the repository: `moved` (now, or by an earlier run of this step: the base is at `after`),
     * `stale` (the base is elsewhere: nothing moved, the caller plans again), or refused where a
     * checkout of the base holds overlapping uncommitted files.
     */
    async moveBase(input: { plan: RepositoryPlan; reason: string }): Promise<MoveAnswer> {
      return withHeartbeat('merge-move-base', () =>
        withRepositoryLock(pool, input.plan.repositoryId, () => moveUnderLock(input.plan, input.reason)),
      );
    },

    /**
     * A task of one repository merged in one step, under the repository's lock from the plan to
     * the move: merges into one base queue on the lock and none finds its plan stale. Its work is
     * brought home (and committed, when consented) first; the plan is recorded before the base
     * moves, and a run of the step again reads it: a base at the plan's commit, or past it, is
     * merged already; a base still where the plan found it moves now; anywhere else, planned again.
     */
    async mergeOneRepository(
      input: PlanInput & { operationId: string; commitUncommitted: boolean; reason: string },
    ): Promise<OneAnswer> {
      const { source } = input;
      const repositoryId = source.repositoryId;
      return withHeartbeat('merge', async () => {
        const { dirty } = await stateOf(source);
        if (dirty) {
          if (!input.commitUncommitted) return { kind: 'uncommitted', repositoryId };
          await commitWork(source, input.message);
        }
        return withRepositoryLock(pool, repositoryId, async () => {
          const git = gitAt(source.sourcePath, { binary });
          const recorded = (await findGitOperation(pool, input.operationId))?.plan?.[0] ?? null;
          if (recorded) {
            const current = await resolveCommit(git, branchRef(recorded.baseBranch));
            if (current === recorded.before && (await moveUnderLock(recorded, input.reason)) === 'moved')
              return { kind: 'merged', plan: recorded };
            if (current === recorded.after) {
              await bringForwardOrPutBack(recorded, git);
              return { kind: 'merged', plan: recorded };
            }
            // Commits landed on it since this merge moved it: merged, never merged twice.
            if (current && (await isAncestor(git, recorded.after, current))) return { kind: 'merged', plan: recorded };
          }
          const answer = await planOn(input, false);
          if (answer.kind !== 'planned') return answer;
          if (recorded) await replacePlan(pool, input.operationId, [answer.plan]);
          else await recordPlan(pool, input.operationId, [answer.plan]);
          const moved = await moveUnderLock(answer.plan, input.reason);
          if (moved === 'moved') return { kind: 'merged', plan: answer.plan };
          if (moved === 'base_checkout_dirty') return { kind: 'base_checkout_dirty', repositoryId };
          // Moved by hand between the read and the update, under no lock of ours: the step plans again.
          throw new Error('the base moved while the merge moved it');
        });
      });
    },

    /** The task branch replayed on its base in its worktree; a conflict changes nothing. */
    async rebaseTaskBranch(source: TaskRepositorySource): Promise<RebaseAnswer> {
      if (!source.taskBranch) return { kind: 'stale' };
      // A clone on an SSH target keeps its own branch: rebased here, the two would part ways.
      if (source.sshTargetId)
        throw typedFailure('workspace_reuse_unsupported', { reason: 'rebase_on_target_unsupported' });
      return withHeartbeat('rebase', () =>
        withRepositoryLock(pool, source.repositoryId, () =>
          rebaseTaskBranch({
            sourcePath: source.sourcePath,
            worktreePath: source.worktreePath,
            taskBranch: source.taskBranch!,
            baseBranch: source.baseBranch,
            identity: config.gitIdentity,
            binary,
          }),
        ),
      );
    },

    /** Where each base of a merge is now (an undo moves them back only if every one is still where the merge left it). */
    async baseCommits(plans: RepositoryPlan[]): Promise<(string | null)[]> {
      return Promise.all(plans.map((p) => resolveCommit(gitAt(p.sourcePath, { binary }), branchRef(p.baseBranch))));
    },

    /** A moved base put back from `after` to `before` (an all-or-nothing merge whose next base could not move). */
    async putBackBase(input: { plan: RepositoryPlan; reason: string }): Promise<'put_back' | 'impossible'> {
      const { plan } = input;
      return withHeartbeat('merge-put-back', () =>
        withRepositoryLock(pool, plan.repositoryId, async () => {
          const git = gitAt(plan.sourcePath, { binary });
          const ref = branchRef(plan.baseBranch);
          const current = await resolveCommit(git, ref);
          if (current === plan.before) return 'put_back';
          if (current !== plan.after) return 'impossible';
          if ((await moveRef(git, ref, plan.before, plan.after, input.reason)) === 'stale') return 'impossible';
          await bringCheckoutsForward(plan.sourcePath, plan.baseBranch, plan.after, plan.before, binary);
          return 'put_back';
        }),
      );
    },
  };

  /**
   * The base's checkouts follow it. Should one refuse now (a file changed there since the check),
   * the base goes back by compare-and-set and the merge is refused: no folder is left disagreeing.
   */
  async function bringForwardOrPutBack(
    plan: RepositoryPlan,
    git: ReturnType<typeof gitAt>,
    folders?: string[],
  ): Promise<void> {
    try {
      await bringCheckoutsForward(plan.sourcePath, plan.baseBranch, plan.before, plan.after, binary, folders);
    } catch (err) {
      logger.warn({ err, repositoryId: plan.repositoryId }, 'a checkout of the base could not follow it');
      await moveRef(git, branchRef(plan.baseBranch), plan.before, plan.after, 'task-workspaces: merge put back');
      throw typedFailure('base_checkout_dirty');
    }
  }
}
