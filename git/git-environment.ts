/**
 * The environment every git command of this process runs in (git/git.ts hands it to simple-git),
 * and what simple-git's own guard is told about it.
 */
import {
  configEnvironment,
  GIT_HARDENING_CONFIG,
  GIT_HARDENING_ENVIRONMENT,
  namedSectionOverrides,
} from '../domain/git-hardening';
import { repositoryNamedSections } from './repository-config';
import { pinnedRepository } from './pinned-repository';

/**
 * simple-git waits a fixed 50 ms after any git command that printed nothing (in its completion
 * plugin, which no option changes): `worktree remove`, `prune`, `update-ref` and a clean
 * `status` all paid it, under the repository lock. git's own trace on stderr counts as output,
 * so every command runs with GIT_TRACE=2. stderr is never read on success, and a non-zero exit
 * is now always an error (which every caller here expects).
 */
const PASSED_ENVIRONMENT = ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TMPDIR', 'TZ'];

/**
 * The environment of every git command this process runs: what git needs to find
 * itself, git's trace, the hardening of domain/git-hardening.ts, and an emptied program for every
 * driver the repository's config files define. Nothing of the caller's environment that names a
 * program (GIT_SSH_COMMAND, GIT_PAGER, GIT_EDITOR, ...) or a config file is passed on.
 */
export function gitEnvironment(
  dir: string,
  anyOwner = false,
  extra: { config?: readonly (readonly [string, string])[]; environment?: Record<string, string> } = {},
): Record<string, string> {
  // GIT_OPTIONAL_LOCKS=0: a status never writes the index back. The index of an agent's worktree is
  // its own (its uid's, written by its git): the service reading it must not take `index.lock` under
  // an agent's `git add`, nor leave a file of its own in the agent's registration folder.
  const env: Record<string, string> = { GIT_TRACE: '2', GIT_OPTIONAL_LOCKS: '0' };
  for (const key of PASSED_ENVIRONMENT) if (process.env[key] !== undefined) env[key] = process.env[key]!;
  // The repository named exactly, never discovered through a pointer an agent could write.
  const pinned = pinnedRepository(dir);
  if (pinned) {
    env.GIT_DIR = pinned.gitDir;
    env.GIT_WORK_TREE = pinned.workTree;
    if (pinned.commonDir !== pinned.gitDir) env.GIT_COMMON_DIR = pinned.commonDir;
  }
  Object.assign(
    env,
    GIT_HARDENING_ENVIRONMENT,
    configEnvironment([
      ...GIT_HARDENING_CONFIG,
      ...namedSectionOverrides(repositoryNamedSections(dir, pinned)),
      ...(anyOwner ? [['safe.directory', '*'] as const] : []),
      // Read last, so they win over the emptied drivers above (a merge's built-in driver).
      ...(extra.config ?? []),
    ]),
    extra.environment ?? {},
  );
  return env;
}

/**
 * simple-git's guard refuses a caller's variables and settings that name programs; here they are
 * the service's own, set to turn those programs off, so its guard is told they are meant.
 */
export const HARDENING_IS_MEANT = {
  allowUnsafeCustomBinary: true,
  allowUnsafeConfigEnvCount: true,
  allowUnsafeConfigPaths: true,
  allowUnsafeEditor: true,
  allowUnsafePager: true,
  allowUnsafeAskPass: true,
  allowUnsafeSshCommand: true,
  allowUnsafeGitProxy: true,
  allowUnsafeHooksPath: true,
  allowUnsafeFsMonitor: true,
  allowUnsafeFilter: true,
  allowUnsafeDiffExternal: true,
  allowUnsafeDiffTextConv: true,
  allowUnsafeMergeDriver: true,
  allowUnsafeCredentialHelper: true,
  allowUnsafeProtocolOverride: true,
} as const;
