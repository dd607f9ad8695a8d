/**
 * The checks a repository passes before it is registered, run on the host that holds it: the path
 * is an absolute, existing directory under the host's allowed roots and outside the service's own
 * folders (task worktrees, data), the top level of a git
 * repository, and its default branch exists. Each refusal is a sentence for the caller: no path.
 */
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { branchNameProblem } from '../domain/refs';
import { isWithinFolder } from '../domain/task-layout';
import { branchCommit, rootCommit } from './branches';
import { currentBranch, showToplevel } from './checkout';
import { gitAt, run } from './git';

/** The refusal when the path is a usable repository but the branch asked for is not in it. */
export const BRANCH_MISSING = 'The default branch does not exist in the repository.';

/** `rootCommit`: the default branch's root (asked for by a registration, null otherwise), recorded as the repository's identity. */
export type RepositoryCheck =
  { ok: true; path: string; defaultBranch: string; rootCommit: string | null } | { ok: false; problem: string };

/** `identity`: also read the root commit (a registration's: it walks the branch's history once). */
export interface RepositoryCheckInput {
  path: string;
  defaultBranch?: string;
  identity?: boolean;
}

export async function checkRepository(
  input: RepositoryCheckInput,
  host: { gitBinary: string; repositoryRoots: string[]; workspaceRoot: string; dataDir: string },
): Promise<RepositoryCheck> {
  const gitOptions = { binary: host.gitBinary };
  const refuse = (problem: string): RepositoryCheck => ({ ok: false, problem });
  if (!path.isAbsolute(input.path)) return refuse('The repository path must be absolute.');
  const real = await realpath(input.path).catch(() => null);
  if (!real || !(await stat(real)).isDirectory())
    return refuse('The repository path does not exist or is not a directory.');
  const roots = await Promise.all(host.repositoryRoots.map((root) => realpath(root).catch(() => root)));
  if (roots.length > 0 && !roots.some((root) => isWithinFolder(real, root)))
    return refuse('The repository path is outside the allowed repository roots.');
  // The service's own folders hold task worktrees and its data: never a repository of their own.
  const own = await Promise.all(
    [host.workspaceRoot, host.dataDir].map((root) => realpath(root).catch(() => path.resolve(root))),
  );
  if (own.some((root) => isWithinFolder(real, root)))
    return refuse("The path is inside the service's own workspace or data folder.");
  const toplevel = await showToplevel(real, gitOptions);
  if (!toplevel) return refuse('The path is not a git repository with a working tree.');
  if (toplevel !== real) return refuse('The path must be the top level of its git repository.');
  const branch = input.defaultBranch ?? (await currentBranch(real, gitOptions));
  if (!branch) return refuse('The repository has no current branch; give defaultBranch.');
  const problem = branchNameProblem(branch);
  if (problem) return refuse(`The default branch name ${problem}.`);
  const git = gitAt(real, gitOptions);
  if (!(await branchCommit(git, branch))) {
    // A repository with no commit has no branch at all: a worktree needs one to start from.
    const anyBranch = (await run(git, ['for-each-ref', '--count=1', '--format=%(objectname)', 'refs/heads/'])).trim();
    return refuse(anyBranch ? BRANCH_MISSING : 'The repository has no commits yet; commit once, then register it.');
  }
  return {
    ok: true,
    path: real,
    defaultBranch: branch,
    rootCommit: input.identity ? await rootCommit(git, branch) : null,
  };
}
