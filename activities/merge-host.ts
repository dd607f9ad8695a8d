/**
 * Finishing a task on the host that holds its repositories [R8]: what its workspace holds, the
 * plan of each repository's merge (commits made, no ref moved), and the base's moves, each by
 * compare-and-set under the repository's lock so merges into one base run one at a time. Every
 * step is idempotent: a move run again finds the base where it left it.
 */
import { withRepositoryLock } from '../db/locks';
import type { MergeStrategy, RepositoryPlan, TaskRepositorySource } from '../domain/merge';
import { bringCheckoutsForward, changedPaths, checkoutsOverlap } from '../git/base-checkouts';
import { branchRef, resolveCommit } from '../git/branches';
import { commitWorktreeWork } from '../git/commit-work';
import { gitAt } from '../git/git';
import { mergeGitAt, moveRef, planStrategy } from '../git/merge-commits';
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

  return {
    async inspectTaskRepositories(sources: TaskRepositorySource[]): Promise<RepositoryState[]> {
      return withHeartbeat('merge-inspect', () => Promise.all(sources.map(stateOf)));
    },

    /** The task's uncommitted work committed on its branch (consented); the new head, or null when there was none. */
    async commitTaskWork(input: { source: TaskRepositorySource; message: string }): Promise<string | null> {
      const { source } = input;
      if (!source.worktreePath || !source.taskBranch) return null;
      // A clone on an SSH target is committed there by its agent: the service commits nothing on a target.
      if (source.sshTargetId)
        throw typedFailure('task_uncommitted_changes', {
          repositoryIds: [source.repositoryId],
          reason: 'commit_on_target_unsupported',
        });
      return withHeartbeat('merge-commit-work', () =>
        commitWorktreeWork(source.worktreePath!, source.taskBranch!, {
          identity: config.gitIdentity,
          message: input.message,
          binary,
        }),
      );
    },

    /** One repository's plan on its base as it is now: the commit the base would move to, made, nothing moved. */
    async planMergeRepository(input: {
      source: TaskRepositorySource;
      strategy: MergeStrategy;
      since: string | null;
      message: string;
    }): Promise<PlanAnswer> {
      const { source, strategy } = input;
      const repositoryId = source.repositoryId;
      return withHeartbeat('merge-plan', async () => {
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
        const changed = await changedPaths(source.sourcePath, before, planned.after, binary);
        if (await checkoutsOverlap(source.sourcePath, source.baseBranch, changed, binary))
          return { kind: 'base_checkout_dirty', repositoryId };
        return {
          kind: 'planned',
          plan: {
            repositoryId,
            hostId: source.hostId,
            sourcePath: source.sourcePath,
            baseBranch: source.baseBranch,
            before,
            taskHead,
            after: planned.after,
          },
        };
      });
    },

    /**
     * The base moved from the plan's `before` to its `after`, in turn with every other merge into
     * the repository: `moved` (now, or by an earlier run of this step: the base is at `after`),
     * `stale` (the base is elsewhere: nothing moved, the caller plans again), or refused where a
     * checkout of the base holds overlapping uncommitted files.
     */
    async moveBase(input: { plan: RepositoryPlan; reason: string }): Promise<MoveAnswer> {
      const { plan } = input;
      return withHeartbeat('merge-move-base', () =>
        withRepositoryLock(pool, plan.repositoryId, async () => {
          const git = gitAt(plan.sourcePath, { binary });
          const ref = branchRef(plan.baseBranch);
          const current = await resolveCommit(git, ref);
          if (current !== plan.after) {
            if (current !== plan.before) return 'stale';
            const changed = await changedPaths(plan.sourcePath, plan.before, plan.after, binary);
            if (await checkoutsOverlap(plan.sourcePath, plan.baseBranch, changed, binary)) return 'base_checkout_dirty';
            if ((await moveRef(git, ref, plan.after, plan.before, input.reason)) === 'stale') return 'stale';
          }
          await bringForwardOrPutBack(plan, git);
          return 'moved';
        }),
      );
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
  async function bringForwardOrPutBack(plan: RepositoryPlan, git: ReturnType<typeof gitAt>): Promise<void> {
    try {
      await bringCheckoutsForward(plan.sourcePath, plan.baseBranch, plan.before, plan.after, binary);
    } catch (err) {
      logger.warn({ err, repositoryId: plan.repositoryId }, 'a checkout of the base could not follow it');
      await moveRef(git, branchRef(plan.baseBranch), plan.before, plan.after, 'task-workspaces: merge put back');
      throw typedFailure('base_checkout_dirty');
    }
  }
}
