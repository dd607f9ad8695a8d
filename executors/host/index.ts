/**
 * What the worktree and local executors share: both run their agents on this host, read their
 * logs and git status here, and clean up here. Only their workspaces differ (a worktree made per
 * repository, or the source checkout itself).
 */
import { bringHostBranchHome } from './branch-home';
import path from 'node:path';
import type { LogSource } from '../../domain/agent-log';
import type { AgentOperations, CleanupOperations, DiskOperations, GitOperations } from '../executor';
import type { ActivityDeps } from '../support/deps';
import { typedFailure } from '../support/failures';
import { localLog } from './agent-log';
import { hostAgents } from './agents';
import { hostCleanup } from './cleanup';
import { directoryBytes } from './disk';
import { recoverHostAgents } from './exits';
import { readHostGitStatus } from './git-status';

/** A log of this host's log folder, and nothing else (the path comes from a row, but a host never reads outside its logs on anyone's word). */
function hostLog(logDir: string, logPath: string): LogSource {
  const resolved = path.resolve(logPath);
  if (!resolved.startsWith(path.resolve(logDir) + path.sep) || !resolved.endsWith('.log'))
    throw typedFailure('not_found');
  return localLog(resolved);
}

export type HostOperations = AgentOperations &
  GitOperations &
  DiskOperations &
  Omit<CleanupOperations, 'removeAudited'>;

export function hostOperations(deps: ActivityDeps): HostOperations {
  const { pool, config, logger } = deps;
  return {
    ...hostAgents(deps),
    openLog: async (_place, logPath) => hostLog(config.logDir, logPath),
    recoverAgents: (hostId) => recoverHostAgents(pool, hostId, logger, config.gitBinary),
    readGitStatus: (target) => readHostGitStatus(deps, target),
    bringBranchHome: (source) => bringHostBranchHome(deps, source),
    workspaceBytes: (place) => directoryBytes(place.workspacePath),
    ...hostCleanup(deps),
  };
}
