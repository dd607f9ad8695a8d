/**
 * A thin typed layer over simple-git for the few commands this product runs. Used by the
 * host activities (which change worktrees) and by the gateway's read-only input checks.
 * The git binary is configuration, so fault injection hands in a wrapper script.
 */
import childProcess from 'node:child_process';
import { readFile, realpath } from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import { startFromSpawnOptions } from './process-starter';
import { gitEnvironment, HARDENING_IS_MEANT } from './git-environment';

export interface GitOptions {
  binary: string;
}

/** The git binaries whose processes this process starts through its process starter. */
const startedThroughStarter = new Set<string>();

/**
 * simple-git starts git with `child_process.spawn`, and no option of it changes that; git.ts's
 * binaries are routed to the process starter (git/process-starter.ts: a fork of this large
 * process costs 4-5 ms of CPU, one of the small helper a fraction of that). Every other spawn
 * (the agent shim, the services) goes to Node's own, unchanged.
 */
function startGitThroughStarter(binary: string): void {
  if (startedThroughStarter.has(binary)) return;
  if (startedThroughStarter.size === 0) {
    const nodeSpawn = childProcess.spawn;
    // simple-git's call: (binary, args, { cwd, env }) with the default pipes.
    function routed(this: unknown, file: string, ...rest: unknown[]) {
      const [args, options] = rest as [unknown, childProcess.SpawnOptions | undefined];
      if (startedThroughStarter.has(file) && Array.isArray(args) && options?.stdio === undefined)
        return startFromSpawnOptions(file, args, options);
      return Reflect.apply(nodeSpawn, this, [file, ...rest]);
    }
    childProcess.spawn = routed as unknown as typeof childProcess.spawn;
    // simple-git's ESM build holds a live binding to the builtin's export.
    syncBuiltinESMExports();
  }
  startedThroughStarter.add(binary);
}

export function gitAt(dir: string, options: GitOptions): SimpleGit {
  startGitThroughStarter(options.binary);
  const env = gitEnvironment(dir);
  return simpleGit({
    baseDir: dir,
    binary: options.binary,
    maxConcurrentProcesses: 4,
    trimmed: false,
    allowEnvironment: Object.keys(env),
    unsafe: HARDENING_IS_MEANT,
  }).env(env);
}

async function run(git: SimpleGit, args: string[]): Promise<string> {
  return git.raw(args);
}

/** The commit a ref points at, or null when the ref does not exist. */
export async function resolveCommit(git: SimpleGit, ref: string): Promise<string | null> {
  const out = (
    await run(git, ['rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`]).catch(() => '')
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

/** Absolute top level of the checkout containing dir, symlinks resolved; null when not in a work tree. */
export async function showToplevel(dir: string, options: GitOptions): Promise<string | null> {
  try {
    const out = (await run(gitAt(dir, options), ['rev-parse', '--show-toplevel'])).trim();
    return out ? await realpath(out) : null;
  } catch {
    return null;
  }
}

/** Absolute common git dir (shared by all worktrees of a repository), symlinks resolved. */
export async function commonDir(dir: string, options: GitOptions): Promise<string | null> {
  try {
    const out = (await run(gitAt(dir, options), ['rev-parse', '--git-common-dir'])).trim();
    return out ? await realpath(path.resolve(dir, out)) : null;
  } catch {
    return null;
  }
}

/** The current branch's short name, or null when HEAD is detached or missing. */
export async function currentBranch(dir: string, options: GitOptions): Promise<string | null> {
  try {
    const out = (await run(gitAt(dir, options), ['symbolic-ref', '--quiet', '--short', 'HEAD'])).trim();
    return out || null;
  } catch {
    return null;
  }
}

/**
 * A checkout's HEAD commit and the branch it is on (null: detached), from one git process; null
 * when unreadable. The removal audit reads it just before it removes (R6.6).
 */
export async function headAndBranch(
  dir: string,
  options: GitOptions,
): Promise<{ head: string; branch: string | null } | null> {
  try {
    const [head, ref] = (await run(gitAt(dir, options), ['rev-parse', 'HEAD', '--symbolic-full-name', 'HEAD']))
      .trim()
      .split('\n')
      .map((line) => line.trim());
    if (!head || !/^[0-9a-f]{40,64}$/.test(head) || !ref) return null;
    return { head, branch: ref.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : null };
  } catch {
    return null;
  }
}

export interface WorktreeEntry {
  path: string;
  head: string | null;
  branch: string | null; // short name, null when detached
  bare: boolean;
  prunable: boolean;
  locked: boolean;
}

export function parseWorktreeList(porcelain: string): WorktreeEntry[] {
  const entries: WorktreeEntry[] = [];
  let current: WorktreeEntry | null = null;
  for (const line of porcelain.split('\n')) {
    if (line.startsWith('worktree ')) {
      current = {
        path: line.slice('worktree '.length),
        head: null,
        branch: null,
        bare: false,
        prunable: false,
        locked: false,
      };
      entries.push(current);
    } else if (!current) {
      continue;
    } else if (line.startsWith('HEAD ')) {
      current.head = line.slice(5);
    } else if (line.startsWith('branch ')) {
      current.branch = line.slice(7).replace(/^refs\/heads\//, '');
    } else if (line === 'bare') {
      current.bare = true;
    } else if (line.startsWith('prunable')) {
      current.prunable = true;
    } else if (line.startsWith('locked')) {
      current.locked = true;
    }
  }
  return entries;
}

export async function listWorktrees(git: SimpleGit): Promise<WorktreeEntry[]> {
  return parseWorktreeList(await run(git, ['worktree', 'list', '--porcelain']));
}

/**
 * Adds a worktree. With createFrom, the branch is created there and git refuses if it
 * already exists (a create-only ref update: an existing branch is never moved).
 */
export async function addWorktree(
  git: SimpleGit,
  worktreePath: string,
  branch: string,
  createFrom: string | null,
): Promise<void> {
  const args = createFrom
    ? ['worktree', 'add', '--no-track', '-b', branch, worktreePath, createFrom]
    : ['worktree', 'add', worktreePath, branch];
  await run(git, args);
}

export async function removeWorktree(git: SimpleGit, worktreePath: string, force: boolean): Promise<void> {
  await run(git, ['worktree', 'remove', ...(force ? ['--force'] : []), worktreePath]);
}

export async function pruneWorktrees(git: SimpleGit): Promise<void> {
  await run(git, ['worktree', 'prune']);
}

/** Deletes a branch only if it still points at `expected` (compare-and-delete). */
export async function deleteBranchIfAt(git: SimpleGit, branch: string, expected: string): Promise<void> {
  await run(git, ['update-ref', '-d', branchRef(branch), expected]);
}

/**
 * A registered worktree whose branch is gone (deleted while it had it checked out, by an undo of
 * an older version, issue 30, or by hand): the branch is created again, create-only, at the
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
 * A worktree's administrative id (its folder under <common>/worktrees) and its HEAD commit, read
 * by one git process; null when unreadable (git's error, if it failed, goes to `onError`).
 */
export async function worktreeIdentity(
  worktreeDir: string,
  options: GitOptions,
  onError: (err: unknown) => void = () => {},
): Promise<{ id: string; head: string } | null> {
  try {
    const [gitDir, head] = (await run(gitAt(worktreeDir, options), ['rev-parse', '--absolute-git-dir', 'HEAD']))
      .trim()
      .split('\n');
    const match = /\/worktrees\/([^/]+)$/.exec(gitDir ?? '');
    return match && head && /^[0-9a-f]{40,64}$/.test(head) ? { id: match[1]!, head } : null;
  } catch (err) {
    onError(err);
    return null;
  }
}

export interface FileStatus {
  path: string;
  status: string; // the two-letter porcelain code, e.g. " M", "??", "A "
}

/**
 * Whether a worktree holds uncommitted work, failing closed: a status git cannot read is
 * `unreadable` (with its error), which every caller treats as dirty: never removed, never clean.
 */
export async function worktreeDirtiness(
  dir: string,
  options: GitOptions,
): Promise<{ state: 'clean' | 'dirty' } | { state: 'unreadable'; err: unknown }> {
  try {
    return { state: (await fileStatus(dir, options)).length > 0 ? 'dirty' : 'clean' };
  } catch (err) {
    return { state: 'unreadable', err };
  }
}

/** Changed, staged and untracked files of a worktree (porcelain v1, NUL separated, so any file name is safe). */
export async function fileStatus(dir: string, options: GitOptions): Promise<FileStatus[]> {
  return parsePorcelainZ(await run(gitAt(dir, options), ['status', '--porcelain=v1', '-z', '--untracked-files=all']));
}

/** The files of `git status --porcelain=v1 -z` output (a rename's source is skipped). */
export function parsePorcelainZ(out: string): FileStatus[] {
  const parts = out.split('\0');
  const files: FileStatus[] = [];
  for (let i = 0; i < parts.length; i++) {
    const entry = parts[i]!;
    if (entry.length < 4) continue;
    const status = entry.slice(0, 2);
    files.push({ path: entry.slice(3), status });
    if (status[0] === 'R' || status[0] === 'C') i++; // the next part is the rename's source
  }
  return files;
}

/** Commits HEAD has that `base` has not (ahead) and the reverse (behind). */
export async function aheadBehind(
  dir: string,
  base: string,
  options: GitOptions,
): Promise<{ ahead: number; behind: number } | null> {
  try {
    const out = (
      await run(gitAt(dir, options), ['rev-list', '--left-right', '--count', `${branchRef(base)}...HEAD`])
    ).trim();
    const [behind, ahead] = out.split(/\s+/).map(Number);
    return { ahead: ahead ?? 0, behind: behind ?? 0 };
  } catch {
    return null;
  }
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

/**
 * Saves a worktree's uncommitted work (tracked changes, staged or not, and untracked files that
 * are not ignored) as a commit on `ref`, without touching its files. Returns the commit, or null
 * when there was nothing to save.
 */
export async function saveUncommittedWork(
  dir: string,
  ref: string,
  message: string,
  options: GitOptions,
): Promise<string | null> {
  const git = gitAt(dir, options);
  await run(git, ['add', '--all']); // the index of a worktree about to be removed, so untracked files are included
  const commit = (await run(git, ['stash', 'create', message])).trim();
  if (!commit) return null;
  await run(git, ['update-ref', '-m', message, ref, commit]);
  return commit;
}

/**
 * A checkout's top level and its absolute common git dir (symlinks resolved), from one git
 * process (`showToplevel` and `commonDir` in one); null when it is not a checkout with a work tree.
 */
export async function checkoutIdentity(
  dir: string,
  options: GitOptions,
): Promise<{ toplevel: string; commonDir: string } | null> {
  try {
    const [toplevel, common] = (await run(gitAt(dir, options), ['rev-parse', '--show-toplevel', '--git-common-dir']))
      .split('\n')
      .map((line) => line.trim());
    if (!toplevel || !common) return null;
    const [realTop, realCommon] = await Promise.all([realpath(toplevel), realpath(path.resolve(dir, common))]);
    return { toplevel: realTop, commonDir: realCommon };
  } catch {
    return null;
  }
}
