/**
 * The end of a remote workspace: its work brought back to the host repository (git bundles over
 * the SSH channel, nothing pushed anywhere), then an audited removal that re-checks everything in
 * the same script right before deleting.
 */
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { SimpleGit } from 'simple-git';
import { branchCommit, branchRef, resolveCommit } from '../git/branches';
import { listWorktrees } from '../git/worktrees';
import { gitAt } from '../git/git';
import type { LeftOut } from '../git/saved-work';
import { storeSave } from '../git/saved-work-ref';
import { DEFAULT_REBUILDABLE, splitIgnored } from '../domain/rebuildable';
import type { SshTarget } from './connection';
import { BUNDLE_BRANCH, IGNORED_PATHS, LOCAL_HEADS, REMOVE_CLONE, REMOVE_FOLDER, SAVE_WORK } from './cleanup-scripts';
import { absolutePath, RemoteOperationError, runScript } from './remote-scripts';
import { HOST_GIT, validBranch } from './remote-workspace';

/** Bundling a clone's history back: minutes, not seconds. */
const BUNDLE_TIMEOUT_MS = 15 * 60_000;

/** The remote ref the saved-work commit is bundled from; deleted in the same script. */
const SAVE_TEMP_REF = 'refs/tws-remote-save/pending';

const COMMIT = /^[0-9a-f]{40,64}$/;

/**
 * The remote clone's branch commit (null when it has none) and, of its local branch heads, those
 * the host repository already has: a bundle leaves their history out, so only new work crosses
 * the channel (a reply is capped in size by the transport).
 */
async function remoteHeads(
  target: SshTarget,
  host: SimpleGit,
  repoPath: string,
  branch: string,
): Promise<{ branchCommit: string | null; known: string[] }> {
  const result = await runScript(target, LOCAL_HEADS, [absolutePath(repoPath), branch]);
  const [first, ...heads] = result.stdout.toString('utf8').split('\n').filter(Boolean);
  if (
    result.code !== 0 ||
    first === undefined ||
    (first !== '-' && !COMMIT.test(first)) ||
    !heads.every((h) => COMMIT.test(h))
  )
    throw new RemoteOperationError('branch_unreadable');
  const known: string[] = [];
  for (const head of new Set(heads)) if ((await resolveCommit(host, head)) === head) known.push(head);
  return { branchCommit: first === '-' ? null : first, known };
}

async function withHostBundle<T>(bytes: Buffer, use: (bundlePath: string) => Promise<T>): Promise<T> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'tws-bundle-'));
  try {
    const bundlePath = path.join(scratch, 'back.bundle');
    await writeFile(bundlePath, bytes, { mode: 0o600 });
    return await use(bundlePath);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * Uncommitted work of a remote clone saved as a commit, as git/saved-work.ts saveWorkOnRef saves a
 * host worktree's: tracked and untracked files, ignored ones except what is rebuilt (`rebuildable`,
 * listed in a first trip and chosen here), and the index as it was as the commit's second parent.
 * Bundled back and stored on the host repository at the ref `refFor(commit)` names. Returns both
 * and the ignored paths left out, or null when the clone was clean.
 */
export async function saveRemoteWork(
  target: SshTarget,
  a: {
    repoPath: string;
    hostRepository: string;
    refFor: (commit: string) => string;
    message: string;
    rebuildable?: readonly string[];
  },
): Promise<{ ref: string; commit: string; leftOut: LeftOut[] } | null> {
  const host = gitAt(a.hostRepository, HOST_GIT);
  const { known } = await remoteHeads(target, host, a.repoPath, '');
  const { saved, leftOut } = splitIgnored(
    await remoteIgnored(target, a.repoPath),
    a.rebuildable ?? DEFAULT_REBUILDABLE,
  );
  const keep = Buffer.from(saved.map((p) => `${p}\0`).join(''), 'utf8');
  const result = await runScript(target, SAVE_WORK, [absolutePath(a.repoPath), a.message, SAVE_TEMP_REF, ...known], {
    timeoutMs: BUNDLE_TIMEOUT_MS,
    stdin: keep,
  });
  if (result.code !== 0) throw new RemoteOperationError(result.code === 10 ? 'not_a_checkout' : 'save_failed');
  const newline = result.stdout.indexOf(0x0a);
  const header = result.stdout.subarray(0, newline).toString('utf8');
  if (header === 'clean') return null;
  const match = /^saved ([0-9a-f]{40,64})$/.exec(header);
  if (!match) throw new RemoteOperationError('save_unreadable');
  const commit = match[1]!;
  await withHostBundle(result.stdout.subarray(newline + 1), async (bundlePath) => {
    try {
      await host.raw(['bundle', 'unbundle', bundlePath]);
    } catch {
      throw new RemoteOperationError('bundle_unreadable');
    }
  });
  if ((await resolveCommit(host, commit)) !== commit) throw new RemoteOperationError('bundle_unreadable');
  return { ...(await storeSave(host, a.refFor(commit), commit, a.message)), leftOut };
}

/** What git ignores in a remote clone (paths from its top, an ignored folder once). */
async function remoteIgnored(target: SshTarget, repoPath: string): Promise<string[]> {
  const result = await runScript(target, IGNORED_PATHS, [absolutePath(repoPath)]);
  if (result.code !== 0) throw new RemoteOperationError(result.code === 10 ? 'not_a_checkout' : 'save_failed');
  return result.stdout.toString('utf8').split('\0').filter(Boolean);
}

/**
 * Brings the remote task branch's commits back to the host repository: 'present' when the host
 * already has the remote branch's commit; else the branch is bundled on the remote and fetched
 * into the host branch without force: 'fetched' when it was absent or fast-forwarded, 'refused'
 * when git refuses (diverged, or checked out in a host worktree): the caller keeps the remote folder.
 */
export async function bringBranchBack(
  target: SshTarget,
  a: { repoPath: string; branch: string; hostRepository: string },
): Promise<'present' | 'fetched' | 'refused'> {
  if (!(await validBranch(a.branch))) throw new RemoteOperationError('invalid_branch');
  const host = gitAt(a.hostRepository, HOST_GIT);
  const { branchCommit: remoteCommit, known } = await remoteHeads(target, host, a.repoPath, a.branch);
  if (remoteCommit === null) throw new RemoteOperationError('branch_unreadable');
  if ((await resolveCommit(host, remoteCommit)) === remoteCommit) {
    if ((await branchCommit(host, a.branch)) === remoteCommit) return 'present';
    // The host has the commit (the saved work's bundle brought it as the save's parent) but not
    // on its branch: moved there by the same fetch, from the host repository itself.
    return fetchKnownCommit(host, a.branch, remoteCommit);
  }
  const bundle = await runScript(target, BUNDLE_BRANCH, [absolutePath(a.repoPath), a.branch, ...known], {
    timeoutMs: BUNDLE_TIMEOUT_MS,
  });
  if (bundle.code !== 0) throw new RemoteOperationError('bundle_failed');
  const ref = branchRef(a.branch);
  return withHostBundle(bundle.stdout, async (bundlePath) => {
    try {
      // No `+`: git refuses a non-fast-forward and a branch checked out in a worktree.
      await host.raw(['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', bundlePath, `${ref}:${ref}`]);
    } catch {
      return 'refused';
    }
    return (await branchCommit(host, a.branch)) === remoteCommit ? 'fetched' : 'refused';
  });
}

/**
 * The branch moved to a commit the host repository already has, by the rules of the bundle's
 * fetch: never a non-fast-forward, never a branch checked out in a host worktree, and only from
 * the value it was read at (a compare-and-swap). Not a fetch from the repository itself: that runs
 * git's upload-pack on it, which refuses a checkout owned by another user (a person's).
 */
async function fetchKnownCommit(host: SimpleGit, branch: string, commit: string): Promise<'fetched' | 'refused'> {
  const ref = branchRef(branch);
  const current = await branchCommit(host, branch);
  if (current !== null) {
    const ancestor = await host.raw(['merge-base', '--is-ancestor', current, commit]).then(
      () => true,
      () => false,
    );
    if (!ancestor) return 'refused';
  }
  if ((await listWorktrees(host)).some((entry) => entry.branch === branch)) return 'refused';
  try {
    await host.raw(['update-ref', ref, commit, current ?? '']);
  } catch {
    return 'refused';
  }
  return (await branchCommit(host, branch)) === commit ? 'fetched' : 'refused';
}

const REMOVE_ANSWERS = [
  'removed',
  'already_gone',
  'not_a_directory',
  'not_a_checkout',
  'other_branch',
  'moved',
  'dirty',
  'marker_mismatch',
] as const;
type RemoveAnswer = (typeof REMOVE_ANSWERS)[number];

/**
 * Audited removal of a remote clone, every check re-run in the removing script: a real directory
 * in the task folder, whose marker is markerText, a git top level on expectedBranch at
 * expectedHead, clean (no change, no untracked file, no stash). Returns 'removed', 'already_gone',
 * or the first refusal found.
 */
export async function removeRemoteClone(
  target: SshTarget,
  a: {
    taskFolder: string;
    markerText: string;
    repoPath: string;
    expectedBranch: string;
    expectedHead: string;
    /** Its uncommitted work was saved as this commit: removable while it is exactly that. */ savedCommit?:
      string | null;
  },
): Promise<RemoveAnswer> {
  const args = [
    absolutePath(a.taskFolder),
    a.markerText,
    absolutePath(a.repoPath),
    a.expectedBranch,
    a.expectedHead,
    a.savedCommit ?? '',
  ];
  const result = await runScript(target, REMOVE_CLONE, args, { timeoutMs: BUNDLE_TIMEOUT_MS });
  const answer = result.stdout.toString('utf8').trim() as RemoveAnswer;
  if (result.code !== 0) throw new RemoteOperationError(result.code === 10 ? 'removal_incomplete' : 'remove_failed');
  if (!REMOVE_ANSWERS.includes(answer)) throw new RemoteOperationError('remove_unreadable');
  return answer;
}

/** When every clone of the folder is gone: its marker (only when it is markerText) and the folder (rmdir, never recursive). */
export async function removeRemoteTaskFolderIfEmpty(
  target: SshTarget,
  a: { taskFolder: string; markerText: string },
): Promise<'removed' | 'kept' | 'already_gone'> {
  const result = await runScript(target, REMOVE_FOLDER, [absolutePath(a.taskFolder), a.markerText]);
  const answer = result.stdout.toString('utf8').trim();
  if (result.code !== 0 || (answer !== 'removed' && answer !== 'kept' && answer !== 'already_gone'))
    throw new RemoteOperationError('remove_failed');
  return answer;
}
