/**
 * Profiling evidence: what the product's git layer (git/git.ts, over simple-git) adds to one
 * git process, for a command that prints nothing (prune, a missing ref, status of a clean
 * worktree, worktree remove) and for one that prints (worktree list), against plain execFile.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { gitAt } from '../git/git';
import { listWorktrees, pruneWorktrees } from '../git/worktrees';
import { resolveCommit } from '../git/branches';
import { median, round } from './stats';

const execFileAsync = promisify(execFile);

export interface GitLayerCost {
  command: string;
  printsOutput: boolean;
  productLayerMs: number;
  plainGitMs: number;
}

async function medianOf(n: number, fn: () => Promise<unknown>): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await fn().catch(() => {});
    xs.push(performance.now() - start);
  }
  return round(median(xs));
}

export async function measureGitLayer(repoPath: string, n = 9): Promise<GitLayerCost[]> {
  const git = gitAt(repoPath, { binary: 'git' });
  const plain = (args: string[]) => execFileAsync('git', args, { cwd: repoPath });
  return [
    {
      command: 'git worktree prune',
      printsOutput: false,
      productLayerMs: await medianOf(n, () => pruneWorktrees(git)),
      plainGitMs: await medianOf(n, () => plain(['worktree', 'prune'])),
    },
    {
      command: 'git rev-parse --verify --quiet <missing branch>',
      printsOutput: false,
      productLayerMs: await medianOf(n, () => resolveCommit(git, 'refs/heads/bench/no-such-branch')),
      plainGitMs: await medianOf(n, () =>
        plain(['rev-parse', '--verify', '--quiet', '--end-of-options', 'refs/heads/bench/no-such-branch^{commit}']),
      ),
    },
    {
      command: 'git worktree list --porcelain',
      printsOutput: true,
      productLayerMs: await medianOf(n, () => listWorktrees(git)),
      plainGitMs: await medianOf(n, () => plain(['worktree', 'list', '--porcelain'])),
    },
  ];
}
