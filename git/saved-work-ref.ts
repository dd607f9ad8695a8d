/** Where a save of uncommitted work is stored: on its ref, never over an earlier save (git/saved-work.ts makes the saves). */
import type { SimpleGit } from 'simple-git';
import { resolveCommit } from './branches';

/**
 * Stores a save on its ref without ever moving an earlier save off it: a ref that is free is
 * taken (create-only), one that holds the same work already (the same tree: a retried save of the
 * same files) is kept as it is, and one that holds other work (two places of one task saved for
 * one repository: a retained worktree and an SSH clone) keeps it, the new save going to a ref of
 * its own beside it, named by its commit. Answers where the work is.
 */
export async function storeSave(
  git: SimpleGit,
  ref: string,
  commit: string,
  message: string,
): Promise<{ ref: string; commit: string }> {
  const current = await resolveCommit(git, ref);
  if (current === commit) return { ref, commit };
  if (current) {
    const [held, made] = (await git.raw(['rev-parse', `${current}^{tree}`, `${commit}^{tree}`])).trim().split('\n');
    if (held && held === made) return { ref, commit: current };
    const beside = `${ref}-${commit.slice(0, 12)}`;
    await git.raw(['update-ref', '-m', message, beside, commit, '']);
    return { ref: beside, commit };
  }
  // Create-only: a save made meanwhile by another step is never overwritten.
  await git.raw(['update-ref', '-m', message, ref, commit, '']);
  return { ref, commit };
}

/**
 * The save made again by a retried removal (its worker ended between the save and the removal)
 * answered by the earlier one that holds the same work: the same files (tree) on the same HEAD
 * (first parent). The new one's index part differs (the first save staged everything), so the
 * earlier one, which holds the index as the agent left it, is kept and the new ref dropped while it
 * still holds the new commit. Any doubt (a save unreadable) keeps both.
 */
export async function earlierSameSave(
  git: SimpleGit,
  made: { ref: string; commit: string },
  earlier: { ref: string; commit: string }[],
): Promise<{ ref: string; commit: string } | null> {
  for (const e of earlier) {
    if (e.ref === made.ref) continue;
    const same = await git
      .raw(['rev-parse', `${e.commit}^{tree}`, `${made.commit}^{tree}`, `${e.commit}^1`, `${made.commit}^1`])
      .then((out) => {
        const [tree, madeTree, head, madeHead] = out.trim().split('\n');
        return !!tree && tree === madeTree && !!head && head === madeHead;
      })
      .catch(() => false);
    if (!same) continue;
    await git.raw(['update-ref', '-d', made.ref, made.commit]);
    return e;
  }
  return null;
}
