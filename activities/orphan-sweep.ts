/** The orphan sweep on one host: fail closed, remove only unreferenced folders older than the grace period [R6.7]. */
import { lstat, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { livePaths } from '../db/live-paths';
import { sweepVerdict, type SweepResult } from '../domain/orphans';
import { commonDir, fileStatus, gitAt, pruneWorktrees, removeWorktree } from '../git/git';
import type { ActivityDeps } from './deps';
import { withHeartbeat } from './heartbeat';
import { pathExists } from './workspace-fs';

export function orphanSweepRecordActivities({ pool, config }: ActivityDeps) {
  return {
    async liveWorkspacePaths(): Promise<string[]> {
      return livePaths(pool, config.workspaceRoot);
    },
  };
}

export function orphanSweepHostActivities({ config, logger }: ActivityDeps) {
  const gitOptions = { binary: config.gitBinary };

  /** Worktrees inside a folder (a `.git` file, not a repository's `.git` folder), one level down or the folder itself. */
  async function worktreesIn(folder: string): Promise<string[]> {
    const found: string[] = [];
    const candidates = [folder, ...(await readdir(folder, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => path.join(folder, e.name))];
    for (const dir of candidates) {
      const dotGit = await lstat(path.join(dir, '.git')).catch(() => null);
      if (dotGit?.isFile()) found.push(dir);
    }
    return found;
  }

  /** The worktrees an orphan folder holds, or null on any doubt (a worktree with uncommitted work, or unreadable). */
  async function assessOrphan(folder: string): Promise<string[] | null> {
    const worktrees = await worktreesIn(folder);
    for (const wt of worktrees) {
      const status = await fileStatus(wt, gitOptions).catch(() => null);
      if (status === null || status.length > 0) return null;
    }
    return worktrees;
  }

  /** Removes an orphan folder: its worktrees through git, then the rest. Anything git refuses keeps it. */
  async function removeOrphan(folder: string, worktrees: string[]): Promise<'removed' | 'doubt'> {
    for (const wt of worktrees) {
      const common = await commonDir(wt, gitOptions);
      if (!common) return 'doubt';
      const repo = gitAt(path.dirname(common), gitOptions);
      try {
        await removeWorktree(repo, wt, false);
        await pruneWorktrees(repo);
      } catch (err) {
        logger.warn({ err }, 'orphan sweep kept a worktree git would not remove');
        return 'doubt';
      }
    }
    await rm(folder, { recursive: true, force: true });
    return 'removed';
  }

  return {
    async sweepWorkspaceRoot(input: { livePaths: string[]; graceMs: number; dryRun: boolean }): Promise<SweepResult> {
      return withHeartbeat('orphan-sweep', async () => {
        const result: SweepResult = { removed: [], kept: [], dryRun: input.dryRun };
        if (!(await pathExists(config.workspaceRoot))) return result;
        const now = Date.now();
        for (const entry of await readdir(config.workspaceRoot, { withFileTypes: true })) {
          const folder = path.join(config.workspaceRoot, entry.name);
          const st = await lstat(folder).catch(() => null);
          if (!st) continue;
          const verdict = sweepVerdict({ name: entry.name, folder, livePaths: input.livePaths, ageMs: now - st.mtimeMs, graceMs: input.graceMs });
          if (verdict.action === 'keep') {
            result.kept.push({ name: entry.name, reason: verdict.reason });
            continue;
          }
          if (!entry.isDirectory() || st.isSymbolicLink()) {
            result.kept.push({ name: entry.name, reason: 'doubt' });
            continue;
          }
          const worktrees = await assessOrphan(folder);
          if (worktrees === null) {
            result.kept.push({ name: entry.name, reason: 'doubt' });
            continue;
          }
          if (input.dryRun) {
            result.removed.push(entry.name);
            continue;
          }
          const outcome = await removeOrphan(folder, worktrees);
          if (outcome === 'removed') result.removed.push(entry.name);
          else result.kept.push({ name: entry.name, reason: 'doubt' });
        }
        return result;
      });
    },
  };
}
