/** The orphan sweep on one host: fail closed, remove only unreferenced folders older than the grace period [R6.7]. */
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { hostWorkspaceRoot } from '../db/hosts';
import { livePaths } from '../db/live-paths';
import { sweepVerdict, type SweepResult } from '../domain/orphans';
import { bringObjectsHome } from '../git/agent-objects-home';
import { discardObjectStore } from '../git/agent-objects';
import { commonDir } from '../git/checkout';
import { gitAt } from '../git/git';
import { pruneWorktrees, removeWorktree } from '../git/worktrees';
import { worktreeDirtiness } from '../git/worktree-status';
import type { ActivityDeps } from '../executors/support/deps';
import { withHeartbeat } from '../executors/support/heartbeat';
import { lstatIfPresent, pathExists } from '../executors/host/workspace-fs';
import { sweepContainers } from '../executors/container/sweep';

export function orphanSweepRecordActivities({ pool, config }: ActivityDeps) {
  return {
    /** Task folders are reckoned under the swept host's root (its record's), not this worker's. */
    async liveWorkspacePaths(hostId?: string): Promise<string[]> {
      return livePaths(pool, (hostId ? await hostWorkspaceRoot(pool, hostId) : null) ?? config.workspaceRoot);
    },
  };
}

export function orphanSweepHostActivities(deps: ActivityDeps) {
  const { config, logger } = deps;
  const gitOptions = { binary: config.gitBinary };

  /**
   * The worktrees inside a folder (a `.git` file in the folder itself or one level down), or null
   * on any doubt: a repository (a `.git` folder) anywhere, a `.git` deeper down, or anything that
   * cannot be read. Only what is proven a worktree here is removed through git; the rest keeps it.
   */
  async function worktreesIn(folder: string): Promise<string[] | null> {
    const found: string[] = [];
    const walk = async (dir: string, depth: number): Promise<boolean> => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.name === '.git') {
          if (!entry.isFile() || depth > 1) return false;
          found.push(dir);
        } else if (entry.isDirectory() && !(await walk(full, depth + 1))) return false;
      }
      return true;
    };
    try {
      return (await walk(folder, 0)) ? found : null;
    } catch (err) {
      logger.warn({ err }, 'orphan sweep could not read a folder; it is kept');
      return null;
    }
  }

  /** The worktrees an orphan folder holds, or null on any doubt (a worktree with uncommitted work, or unreadable). */
  async function assessOrphan(folder: string): Promise<string[] | null> {
    const worktrees = await worktreesIn(folder);
    if (worktrees === null) return null;
    for (const wt of worktrees) {
      // A store of a sandboxed agent's objects comes home first; one that cannot keeps the folder.
      if (
        !(await bringObjectsHome(config.agentRoot, wt, config.gitBinary).then(
          () => true,
          () => false,
        ))
      )
        return null;
      const found = await worktreeDirtiness(wt, gitOptions);
      if (found.state === 'unreadable')
        logger.warn({ err: found.err }, 'orphan sweep could not read a worktree status; the folder is kept');
      if (found.state !== 'clean') return null;
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
        await discardObjectStore(config.agentRoot, wt);
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
        // Containers whose records are gone first (each removed alone; their binds are folders judged below).
        const containers = await sweepContainers(deps, input);
        if (containers) result.containers = containers;
        if (!(await pathExists(config.workspaceRoot))) return result;
        const now = Date.now();
        for (const entry of await readdir(config.workspaceRoot, { withFileTypes: true })) {
          const folder = path.join(config.workspaceRoot, entry.name);
          // Gone since it was listed: nothing to judge. Unreadable: kept, and said so.
          const st = await lstatIfPresent(folder).catch(() => 'unreadable' as const);
          if (st === null) continue;
          if (st === 'unreadable') {
            result.kept.push({ name: entry.name, reason: 'doubt' });
            continue;
          }
          const verdict = sweepVerdict({
            name: entry.name,
            folder,
            livePaths: input.livePaths,
            ageMs: now - st.mtimeMs,
            graceMs: input.graceMs,
          });
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
