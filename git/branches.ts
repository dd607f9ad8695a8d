/**
 * Branches and the commits they point at: the refs a launch creates from, cleanup deletes
 * compare-and-swap, and the repository check identifies a repository by.
 */
import { readFile } from 'node:fs/promises';
import type { SimpleGit } from 'simple-git';
import { gitAt, gitExitCode, run, type GitOptions } from './git';

/**
 * The commit a ref points at, or null when the ref does not exist (`--verify --quiet` says so with
 * exit code 1 and nothing else). Any other failure (git not started, killed, a broken repository)
 * is thrown: a ref nobody could read is not a missing one.
 */
export async function resolveCommit(git: SimpleGit, ref: string): Promise<string | null> {
  const out = (
    await run(git, ['rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`]).catch((err) => {
      if (gitExitCode(err) === 1) return '';
      throw err;
    })
  ).trim();
  return /^[0-9a-f]{40,64}$/.test(out) ? out : null;
}

export const branchRef = (branch: string): string => `refs/heads/${branch}`;

export async function branchCommit(git: SimpleGit, branch: string): Promise<string | null> {
  return resolveCommit(git, branchRef(branch));
}

/**
 * The root commit of a branch's history (the oldest, when merged histories have several): what
 * identifies a repository beyond its path. Null when the branch is unreadable.
 */
export async function rootCommit(git: SimpleGit, branch: string): Promise<string | null> {
  const out = await run(git, ['rev-list', '--max-parents=0', '--end-of-options', branchRef(branch)]).catch(() => '');
  const roots = out.split('\n').filter((line) => /^[0-9a-f]{40,64}$/.test(line.trim()));
  return roots.at(-1)?.trim() ?? null;
}

/** The commits of several branches in one git process; a branch that does not exist is absent. */
export async function branchCommits(git: SimpleGit, branches: string[]): Promise<Map<string, string>> {
  const refs = [...new Set(branches)].map(branchRef);
  const out = await run(git, ['for-each-ref', '--format=%(objectname) %(refname)', ...refs]);
  const commits = new Map<string, string>();
  for (const line of out.split('\n')) {
    const [commit, ref] = line.split(' ');
    // A pattern also matches refs below it (refs/heads/a matches refs/heads/a/b): keep exact names.
    if (commit && ref && refs.includes(ref)) commits.set(ref.slice('refs/heads/'.length), commit);
  }
  return commits;
}

/** Deletes a branch only if it still points at `expected` (compare-and-delete). */
export async function deleteBranchIfAt(git: SimpleGit, branch: string, expected: string): Promise<void> {
  await run(git, ['update-ref', '-d', branchRef(branch), expected]);
}

/**
 * A registered worktree whose branch is gone (deleted while it had it checked out, by an undo of
 * an older version, or by hand): the branch is created again, create-only, at the
 * commit the worktree's own HEAD reflog last recorded, when that commit is in the repository.
 * Answers that commit, or null when there is nothing to go by (the caller refuses, typed).
 */
export async function recreateMissingBranch(
  repository: SimpleGit,
  worktreeDir: string,
  branch: string,
  options: GitOptions,
): Promise<string | null> {
  const reflog = (
    await run(gitAt(worktreeDir, options), ['rev-parse', '--path-format=absolute', '--git-path', 'logs/HEAD']).catch(
      () => '',
    )
  ).trim();
  if (!reflog) return null;
  const text = await readFile(reflog, 'utf8').catch(() => '');
  const last = text.trimEnd().split('\n').pop() ?? '';
  const commit = last.split(' ')[1] ?? '';
  if (!/^[0-9a-f]{40,64}$/.test(commit) || !(await resolveCommit(repository, commit))) return null;
  // Create-only (the old value is zero): a branch that came back meanwhile is never moved.
  await run(repository, ['update-ref', branchRef(branch), commit, '0'.repeat(commit.length)]);
  return commit;
}

/**
 * Whether `ancestor` is contained in `descendant`. Counted, not read from an exit code:
 * simple-git reports a non-zero exit without stderr (as `merge-base --is-ancestor` gives) as success.
 */
/**
 * Which of these branches are contained in `base` (their tips reachable from refs/heads/<base>),
 * in one git process. A branch that does not exist is not in it; a failure (a base that does
 * not exist) is thrown, and the caller counts every branch unmerged.
 */
export async function branchesMergedInto(git: SimpleGit, base: string, branches: string[]): Promise<Set<string>> {
  const refs = [...new Set(branches)].map(branchRef);
  const out = await run(git, ['for-each-ref', '--format=%(refname)', `--merged=${branchRef(base)}`, ...refs]);
  // A pattern also matches refs below it: keep exact names.
  return new Set(
    out
      .split('\n')
      .filter((ref) => refs.includes(ref))
      .map((ref) => ref.slice('refs/heads/'.length)),
  );
}
