/**
 * The bare floors of idle release and restore: the git work of git/saved-work.ts and
 * git/worktrees.ts as plain git processes, per repository in order (git's admin files; the
 * product takes a repository's turn for each removal and each worktree add), repositories side
 * by side.
 * - release of a dirty worktree: `git add --all` and `git stash create` in the worktree (the save
 *   commit), `git update-ref` of a save ref, `git worktree remove --force`;
 * - restore: `git worktree add <path> <kept branch>`, then the save's difference from the HEAD it
 *   was made on written by `git diff --binary` and applied by one `git apply` (the product also
 *   runs `git apply --check` first; the floor does not need to).
 * No statements, no agent: the product's launch around the restore is all overhead here.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gitAsync } from './world';

export interface FloorWorktree {
  repoPath: string;
  worktreePath: string;
  branch: string;
  /** The save ref of its release (refs/bench-floor/released/…). */
  saveRef: string;
}

/** Runs `step` over the worktrees of each repository in turn, the repositories side by side. */
async function perRepositoryInOrder(
  worktrees: FloorWorktree[],
  step: (w: FloorWorktree) => Promise<void>,
): Promise<void> {
  const byRepo = new Map<string, FloorWorktree[]>();
  for (const w of worktrees) byRepo.set(w.repoPath, [...(byRepo.get(w.repoPath) ?? []), w]);
  await Promise.all(
    [...byRepo.values()].map(async (list) => {
      for (const w of list) await step(w);
    }),
  );
}

export function releaseOnFloor(worktrees: FloorWorktree[]): Promise<void> {
  return perRepositoryInOrder(worktrees, async (w) => {
    await gitAsync(w.worktreePath, 'add', '--all');
    const commit = await gitAsync(w.worktreePath, 'stash', 'create', 'bench floor: released');
    if (!commit) throw new Error(`floor release: nothing to save in ${w.worktreePath}`);
    await gitAsync(w.repoPath, 'update-ref', '-m', 'bench floor: released', w.saveRef, commit);
    await gitAsync(w.repoPath, 'worktree', 'remove', '--force', w.worktreePath);
  });
}

export async function restoreOnFloor(worktrees: FloorWorktree[]): Promise<void> {
  const folder = await mkdtemp(path.join(tmpdir(), 'tws-bench-restore-'));
  try {
    let n = 0;
    await perRepositoryInOrder(worktrees, async (w) => {
      const patch = path.join(folder, `${n++}.patch`);
      await gitAsync(w.repoPath, 'worktree', 'add', '-q', w.worktreePath, w.branch);
      await gitAsync(
        w.worktreePath,
        'diff',
        '--binary',
        '--full-index',
        '--no-color',
        '--no-ext-diff',
        '--no-textconv',
        `--output=${patch}`,
        `${w.saveRef}^1`,
        w.saveRef,
      );
      await gitAsync(w.worktreePath, 'apply', patch);
    });
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}
