/**
 * A task branch rebased onto its base in its worktree [R8.4]: the commits are replayed without
 * touching anything (git/merge-commits.ts); only a clean replay moves the branch, by
 * compare-and-set, and then the worktree's index and files follow it (it was clean: nothing of
 * the person's or agent's is in the way). A conflict changes nothing at all.
 */
import type { GitIdentity } from '../domain/merge';
import { moveFolder } from './base-checkouts';
import { branchRef, resolveCommit } from './branches';
import { gitAt } from './git';
import { isAncestor, mergeBaseOf, moveRef, replayCommits } from './merge-commits';

export type RebaseAnswer =
  | { kind: 'rebased'; before: string; after: string }
  | { kind: 'nothing'; before: string }
  | { kind: 'conflicts'; conflicts: string[] }
  | { kind: 'stale' };

export async function rebaseTaskBranch(input: {
  sourcePath: string;
  worktreePath: string | null;
  taskBranch: string;
  baseBranch: string;
  identity: GitIdentity;
  binary: string;
}): Promise<RebaseAnswer> {
  const git = gitAt(input.sourcePath, { binary: input.binary });
  const head = await resolveCommit(git, branchRef(input.taskBranch));
  const base = await resolveCommit(git, branchRef(input.baseBranch));
  if (!head || !base) return { kind: 'stale' };
  if (await isAncestor(git, base, head)) return { kind: 'nothing', before: head };
  const from = await mergeBaseOf(git, base, head);
  if (!from) return { kind: 'conflicts', conflicts: [] };
  const replayed = await replayCommits(input.sourcePath, input.binary, input.identity, { onto: base, from, head });
  if (!replayed.clean) return { kind: 'conflicts', conflicts: replayed.conflicts };
  const reason = 'task-workspaces: rebase of the task branch';
  if ((await moveRef(git, branchRef(input.taskBranch), replayed.tip, head, reason)) === 'stale')
    return { kind: 'stale' };
  if (input.worktreePath) {
    try {
      await moveFolder(input.worktreePath, head, replayed.tip, input.binary);
    } catch (err) {
      await moveRef(git, branchRef(input.taskBranch), head, replayed.tip, 'task-workspaces: rebase put back');
      throw err;
    }
  }
  return { kind: 'rebased', before: head, after: replayed.tip };
}
