/**
 * The commits a merge makes, without touching any worktree, index or ref [R8.2, R8.3]: git's
 * `merge-tree --write-tree` (its exit status decides: 0 clean, 1 conflicts) and `commit-tree`.
 * Only `moveRef` moves anything, and only by compare-and-set.
 *
 * Files whose attributes name a merge driver are merged as plain files: the hardening empties every
 * driver a repository's config defines (git would then die on them), so a merge names git's own
 * three-way file merge as that driver (`merge-file`, the built-in text merge as a command).
 */
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import type { SimpleGit } from 'simple-git';
import type { GitIdentity, MergeStrategy } from '../domain/merge';
import { resolveCommit } from './branches';
import { gitAt, gitExitCode, gitStdout, run } from './git';
import { pinnedRepository } from './pinned-repository';
import { repositoryNamedSections } from './repository-config';

const absoluteBinaries = new Map<string, string>();

/** The git binary by absolute path (a merge driver is run through a shell, whose PATH is not ours to trust). */
function absoluteGit(binary: string): string {
  if (binary.includes('/')) return path.resolve(binary);
  let found = absoluteBinaries.get(binary);
  if (found) return found;
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    const candidate = path.join(dir || '.', binary);
    try {
      accessSync(candidate, constants.X_OK);
      found = path.resolve(candidate);
      break;
    } catch {
      // not here
    }
  }
  if (!found) throw new Error('the git binary was not found');
  absoluteBinaries.set(binary, found);
  return found;
}

const shellQuoted = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

/** The repository's git for merging: every merge driver its config names runs git's own file merge. */
export function mergeGitAt(repoPath: string, binary: string, identity?: GitIdentity): SimpleGit {
  const driver = `${shellQuoted(absoluteGit(binary))} merge-file --marker-size=%L %A %O %B`;
  const config: [string, string][] = [];
  for (const [kind, name] of repositoryNamedSections(repoPath, pinnedRepository(repoPath)))
    if (kind === 'merge') config.push([`merge.${name}.driver`, driver]);
  return gitAt(repoPath, { binary, config, environment: identity ? identityEnvironment(identity) : undefined });
}

function identityEnvironment(identity: GitIdentity, author?: CommitAuthor): Record<string, string> {
  return {
    GIT_AUTHOR_NAME: author?.name ?? identity.name,
    GIT_AUTHOR_EMAIL: author?.email ?? identity.email,
    ...(author ? { GIT_AUTHOR_DATE: author.date } : {}),
    GIT_COMMITTER_NAME: identity.name,
    GIT_COMMITTER_EMAIL: identity.email,
  };
}

export async function isAncestor(git: SimpleGit, ancestor: string, of: string): Promise<boolean> {
  try {
    await run(git, ['merge-base', '--is-ancestor', ancestor, of]);
    return true;
  } catch (err) {
    if (gitExitCode(err) === 1) return false;
    throw err;
  }
}

export async function mergeBaseOf(git: SimpleGit, a: string, b: string): Promise<string | null> {
  try {
    return (await run(git, ['merge-base', a, b])).trim() || null;
  } catch (err) {
    if (gitExitCode(err) === 1) return null;
    throw err;
  }
}

type TreeMerge = { clean: true; tree: string } | { clean: false; conflicts: string[] };

/** `merge-tree --write-tree`: the merged tree, or the conflicting files; exit 0 or 1 decides, anything else throws. */
async function mergeTrees(git: SimpleGit, ours: string, theirs: string): Promise<TreeMerge> {
  const args = ['merge-tree', '--write-tree', '-z', '--name-only', '--no-messages', ours, theirs];
  let out: string;
  let clean = true;
  try {
    out = await run(git, args);
  } catch (err) {
    const printed = gitStdout(err);
    if (gitExitCode(err) !== 1 || printed === null) throw err;
    clean = false;
    out = printed;
  }
  const [tree, ...paths] = out.split('\0');
  if (clean) return { clean: true, tree: tree!.trim() };
  return { clean: false, conflicts: [...new Set(paths.filter((p) => p.length > 0))] };
}

export interface CommitAuthor {
  name: string;
  email: string;
  /** git's raw date: `<seconds> <zone>`. */
  date: string;
}

/** A commit of a tree on its parents, with the service's identity (or a kept author's), never a hook. */
export async function commitTree(
  repoPath: string,
  binary: string,
  identity: GitIdentity,
  input: { tree: string; parents: string[]; message: string; author?: CommitAuthor },
): Promise<string> {
  const git = gitAt(repoPath, { binary, environment: identityEnvironment(identity, input.author) });
  const args = ['commit-tree', input.tree];
  for (const parent of input.parents) args.push('-p', parent);
  args.push('-m', input.message);
  return (await run(git, args)).trim();
}

/** A commit's author and message, to replay it with both kept. */
async function commitFacts(git: SimpleGit, commit: string): Promise<{ author: CommitAuthor; message: string }> {
  const out = await run(git, ['show', '-s', '--date=raw', '--format=%an%x00%ae%x00%ad%x00%B', commit]);
  const [name, email, date, ...rest] = out.split('\0');
  return { author: { name: name!, email: email!, date: date! }, message: rest.join('\0').replace(/\n+$/, '\n') };
}

/**
 * The task's own commits since `from` (oldest first, merges left out as a rebase leaves them), each
 * replayed on `onto`: one commit's change is merged onto the current tip with its parent as the
 * merge base, given to merge-tree (which has no `--merge-base` in git 2.39) as a commit of the tip's
 * tree whose parent is that one. Authors are kept; the committer is the service's.
 */
export async function replayCommits(
  repoPath: string,
  binary: string,
  identity: GitIdentity,
  input: { onto: string; from: string; head: string },
): Promise<{ clean: true; tip: string } | { clean: false; conflicts: string[] }> {
  const git = mergeGitAt(repoPath, binary, identity);
  const listed = (
    await run(git, ['rev-list', '--reverse', '--no-merges', '--topo-order', `${input.from}..${input.head}`])
  )
    .split('\n')
    .filter((line) => line.length > 0);
  let tip = input.onto;
  for (const commit of listed) {
    const parent = (await run(git, ['rev-parse', `${commit}^`])).trim();
    const tipTree = (await run(git, ['rev-parse', `${tip}^{tree}`])).trim();
    const stand = await commitTree(repoPath, binary, identity, {
      tree: tipTree,
      parents: [parent],
      message: 'task-workspaces replay',
    });
    const merged = await mergeTrees(git, stand, commit);
    if (!merged.clean) return merged;
    if (merged.tree === tipTree) continue; // already in the base: dropped, as a rebase drops it
    const facts = await commitFacts(git, commit);
    tip = await commitTree(repoPath, binary, identity, {
      tree: merged.tree,
      parents: [tip],
      message: facts.message,
      author: facts.author,
    });
  }
  return { clean: true, tip };
}

export type StrategyPlan =
  | { kind: 'planned'; after: string }
  | { kind: 'nothing' }
  | { kind: 'conflicts'; conflicts: string[] }
  | { kind: 'not_fast_forward' };

/**
 * The commit the base moves to under one strategy, made now and reachable from no ref until the
 * base moves. `since`: the task head an earlier merge of the task took, so a second merge takes
 * only what is new (a squash or a rebase leaves the task's commits out of the base's history).
 */
export async function planStrategy(
  repoPath: string,
  binary: string,
  identity: GitIdentity,
  input: { strategy: MergeStrategy; base: string; head: string; since: string | null; message: string },
): Promise<StrategyPlan> {
  const git = mergeGitAt(repoPath, binary, identity);
  const { base, head, strategy } = input;
  if (head === base || (await isAncestor(git, head, base))) return { kind: 'nothing' };
  const since = input.since && input.since !== head && (await isAncestor(git, input.since, head)) ? input.since : null;
  if (strategy === 'fast_forward')
    return (await isAncestor(git, base, head)) ? { kind: 'planned', after: head } : { kind: 'not_fast_forward' };
  if (strategy === 'rebase') {
    const from = since ?? (await mergeBaseOf(git, base, head));
    if (!from) return { kind: 'conflicts', conflicts: [] };
    const replayed = await replayCommits(repoPath, binary, identity, { onto: base, from, head });
    if (!replayed.clean) return { kind: 'conflicts', conflicts: replayed.conflicts };
    return replayed.tip === base ? { kind: 'nothing' } : { kind: 'planned', after: replayed.tip };
  }
  // squash and merge: the merged tree; after an earlier squash, merged from where that one stopped.
  const ours =
    strategy === 'squash' && since
      ? await commitTree(repoPath, binary, identity, {
          tree: (await run(git, ['rev-parse', `${base}^{tree}`])).trim(),
          parents: [since],
          message: 'task-workspaces merge base',
        })
      : base;
  const merged = await mergeTrees(git, ours, head);
  if (!merged.clean) return { kind: 'conflicts', conflicts: merged.conflicts };
  const baseTree = (await run(git, ['rev-parse', `${base}^{tree}`])).trim();
  if (strategy === 'squash' && merged.tree === baseTree) return { kind: 'nothing' };
  const parents = strategy === 'merge' ? [base, head] : [base];
  return {
    kind: 'planned',
    after: await commitTree(repoPath, binary, identity, { tree: merged.tree, parents, message: input.message }),
  };
}

/**
 * The one way a merge moves a branch: `update-ref <ref> <new> <old>`, so it moves only from the
 * commit the plan was made on. `moved`: it did; `stale`: the ref was not at `from` (nothing moved).
 */
export async function moveRef(
  git: SimpleGit,
  ref: string,
  to: string,
  from: string,
  reason: string,
): Promise<'moved' | 'stale'> {
  try {
    await run(git, ['update-ref', '-m', reason, ref, to, from]);
    return 'moved';
  } catch (err) {
    // A ref already at `to` was moved by an earlier try of the same step (its answer lost); one
    // elsewhere than `from` is the answer; a ref at `from` that did not move is a failure to say.
    const now = await resolveCommit(git, ref);
    if (now === to) return 'moved';
    if (now !== from) return 'stale';
    throw err;
  }
}
