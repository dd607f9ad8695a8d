/**
 * Saving a worktree's uncommitted work on a hidden ref before it is removed, and putting it back
 * into a new worktree [R6.9, R6.10]. A save is one commit (git's `stash create` over the index of
 * everything: modified, added, deleted, untracked and ignored files, but those rebuilt:
 * domain/rebuildable.ts) whose
 * first parent is the HEAD it was made on and whose second is the index as it was. A restore
 * applies exactly the difference between the save and that HEAD: the staged part to the index
 * and the files, the rest to the files, and changes everything or nothing (a write that fails
 * part-way is undone path by path): never a half-applied worktree.
 */
import { lstatSync, unlinkSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { SimpleGit } from 'simple-git';
import { DEFAULT_REBUILDABLE, splitIgnored } from '../domain/rebuildable';
import { gitAt, type GitOptions } from './git';
import { storeSave } from './saved-work-ref';

/**
 * Saves what is uncommitted in `dir` on the ref `refFor(commit)` names (the commit is known
 * only once it is made, so a ref may be named after it); null when there is nothing to save.
 * The saved commit is shaped as git's own stash entry: its tree is the work tree (untracked files
 * included), its first parent the HEAD it was made on, its second the index as it was, so that a
 * restore (or `git stash apply --index` by hand) stages exactly what was staged.
 */
export async function saveWorkOnRef(
  dir: string,
  refFor: (commit: string) => string,
  message: string,
  options: GitOptions,
  rebuildable: readonly string[] = DEFAULT_REBUILDABLE,
): Promise<{ ref: string; commit: string; leftOut: LeftOut[] } | null> {
  const git = gitAt(dir, options);
  // The index as it was, before everything is added; an index git cannot write as a tree (a
  // merge in progress) is saved as the work tree, all of it staged.
  const index = await git.raw(['write-tree']).then(
    (tree) => tree.trim(),
    () => null,
  );
  await git.raw(['add', '--all']); // the index of a worktree about to be removed, so untracked files are included
  // Ignored files too (a hand-written `.env`), except what is rebuilt (dependencies, build output).
  const { saved, leftOut } = splitIgnored(await ignoredEntries(dir, options), rebuildable);
  for (let i = 0; i < saved.length; i += 500)
    await git.raw(['add', '--force', '--', ...saved.slice(i, i + 500).map((p) => `:(top,literal)${p}`)]);
  const stash = (await git.raw(['stash', 'create', message])).trim();
  if (!stash) return null;
  const commit = index ? await withIndexParent(git, stash, index, message) : stash;
  return { ...(await storeSave(git, refFor(commit), commit, message)), leftOut };
}

/** An ignored path a save left out, and why. */
export interface LeftOut {
  path: string;
  reason: 'rebuildable';
}

/** What git ignores in the worktree at `dir`: paths from its top, an ignored folder once (with a trailing `/`). */
async function ignoredEntries(dir: string, options: GitOptions): Promise<string[]> {
  const out = await gitAt(dir, options).raw([
    'ls-files',
    '-z',
    '--others',
    '--ignored',
    '--exclude-standard',
    '--directory',
  ]);
  return out.split('\0').filter(Boolean);
}

/** Whether the worktree holds ignored files a save would keep (not rebuildable): then it is not removed as clean. */
export async function holdsIgnoredWork(
  dir: string,
  options: GitOptions,
  rebuildable: readonly string[] = DEFAULT_REBUILDABLE,
): Promise<boolean> {
  return splitIgnored(await ignoredEntries(dir, options), rebuildable).saved.length > 0;
}

/** The stash entry made again with the index tree it had before everything was added as its second parent. */
async function withIndexParent(git: SimpleGit, stash: string, indexTree: string, message: string): Promise<string> {
  const [head, tree] = (await git.raw(['rev-parse', `${stash}^1`, `${stash}^{tree}`])).trim().split('\n');
  const indexCommit = (await git.raw(['commit-tree', indexTree, '-p', head!, '-m', `index on ${message}`])).trim();
  return (await git.raw(['commit-tree', tree!, '-p', head!, '-p', indexCommit, '-m', message])).trim();
}

/**
 * Writes the work of a saved commit as a binary patch to `file` (by git itself, bytes as they
 * are: a file in another encoding survives): by default exactly the difference between the save
 * and the HEAD it was made on; `from`/`to` name other ends (the index part, the rest). `git` is
 * any checkout that has the commit (the worktree, or the host repository for a remote clone).
 */
async function writeSavedWorkPatch(
  git: SimpleGit,
  commit: string,
  file: string,
  ends: { from: string; to: string } = { from: `${commit}^1`, to: commit },
): Promise<void> {
  await git.raw([
    'diff',
    '--binary',
    '--full-index',
    '--no-color',
    '--no-ext-diff',
    '--no-textconv',
    `--output=${file}`,
    ends.from,
    ends.to,
  ]);
}

/** `use` gets files of a private folder (mkdtemp: 0700), removed once it is done. */
async function withPatchFile<T>(use: (file: string, other: (name: string) => string) => Promise<T>): Promise<T> {
  const folder = await mkdtemp(path.join(tmpdir(), 'tws-restore-'));
  try {
    return await use(path.join(folder, 'work.patch'), (name) => path.join(folder, name));
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** The three patches of a saved commit: all its work, its staged part, the rest (restoreSavedWork's parts). */
export interface SavedWorkPatches {
  whole: Buffer;
  staged: Buffer;
  rest: Buffer;
  /** The paths the whole patch writes (from the top), when asked for: what a restore over a prepared workspace puts back to HEAD first. */
  paths: string[];
}

/** A saved commit's patches, read from the repository at `repoDir` (for a clone elsewhere to apply). */
export async function savedWorkPatches(
  repoDir: string,
  commit: string,
  options: GitOptions,
  /** The paths it writes too (for a restore over a prepared workspace); else none are read. */
  withPaths = false,
): Promise<SavedWorkPatches> {
  const git = gitAt(repoDir, options);
  return withPatchFile(async (file, other) => {
    const { staged, rest } = await writeSavedWorkParts(git, commit, file, other);
    return {
      whole: await readFile(file),
      staged: await readFile(staged),
      rest: await readFile(rest),
      paths: withPaths ? await pathsOfPatch(git, file) : [],
    };
  });
}

/** The whole patch at `file`, and its staged part (HEAD to the index as it was) and the rest beside it. */
async function writeSavedWorkParts(
  git: SimpleGit,
  commit: string,
  file: string,
  other: (name: string) => string,
): Promise<{ staged: string; rest: string }> {
  await writeSavedWorkPatch(git, commit, file);
  const staged = other('staged.patch');
  const rest = other('rest.patch');
  await writeSavedWorkPatch(git, commit, staged, { from: `${commit}^1`, to: `${commit}^2` });
  await writeSavedWorkPatch(git, commit, rest, { from: `${commit}^2`, to: commit });
  return { staged, rest };
}

/**
 * Puts a saved commit's work back into the worktree at `dir`, its index as it was: `applied`
 * (also when it holds nothing), or `conflict` when it does not apply to the worktree as it is
 * (the branch moved since the save): then nothing was changed, and the saved ref is there to
 * apply by hand. What was staged is applied to the index and the files (`git apply --index`),
 * the rest to the files alone, so untracked files come back untracked.
 */
export async function restoreSavedWork(
  dir: string,
  commit: string,
  options: GitOptions,
  /** What a new workspace's preparation (copied files, its setup) wrote where the work goes is put back as HEAD has it first: the work wins. */
  overPreparation = false,
): Promise<'applied' | 'conflict'> {
  const git = gitAt(dir, options);
  return withPatchFile(async (file, other) => {
    const { staged, rest } = await writeSavedWorkParts(git, commit, file, other);
    if ((await stat(file)).size === 0) return 'applied';
    if (overPreparation) await clearPathsOf(git, dir, file);
    const parts = [
      { patch: staged, args: ['--index'] },
      { patch: rest, args: [] },
    ];
    if (!(await applies(git, ['--check', file]))) {
      // A retried restore whose first run applied (and then lost its record) finds its work in place.
      if (await applies(git, ['--check', '--reverse', file])) return 'applied';
      // One whose first run stopped between the two parts finds the staged part in place: the rest follows.
      const stagedInPlace =
        (await stat(staged)).size > 0 && (await applies(git, ['--check', '--reverse', '--index', staged]));
      if (!stagedInPlace || !(await applies(git, ['--check', rest]))) return 'conflict';
      parts.shift();
    }
    for (const part of parts) {
      if ((await stat(part.patch)).size === 0) continue;
      // The whole fits (checked above); a part that does not (a branch that moved in between) is a conflict.
      if (!(await applies(git, ['--check', ...part.args, part.patch]))) {
        if (part.patch === rest) await undoApply(git, commit); // the staged part is in: the worktree goes back whole
        return 'conflict';
      }
      try {
        await git.raw(['apply', ...part.args, part.patch]);
      } catch (err) {
        // The part fits (checked above), so git failed writing it (a disk that filled): what it
        // wrote is put back as HEAD has it, and the caller is told. The saved ref keeps the work.
        await undoApply(git, commit);
        throw err;
      }
    }
    return 'applied';
  });
}

/**
 * Puts every path the saved commit touches back as HEAD has it, and removes those HEAD does not
 * have: after a failed apply into a new worktree, it is the checkout it was. Only those paths
 * are touched.
 */
async function undoApply(git: SimpleGit, commit: string): Promise<void> {
  const touched = (await git.raw(['diff', '--name-only', '-z', '--no-renames', `${commit}^1`, commit]))
    .split('\0')
    .filter(Boolean);
  if (touched.length === 0) return;
  const root = (await git.raw(['rev-parse', '--show-toplevel'])).trim();
  const inHead = new Set(
    (await git.raw(['ls-tree', '-r', '-z', '--name-only', '--full-tree', 'HEAD'])).split('\0').filter(Boolean),
  );
  const kept = touched.filter((p) => inHead.has(p));
  const spec = (paths: string[]) => paths.map((p) => `:(top,literal)${p}`);
  for (let i = 0; i < kept.length; i += 500) await git.raw(['checkout', 'HEAD', '--', ...spec(kept.slice(i, i + 500))]);
  // What the index part staged that HEAD does not have leaves the index too.
  const added = touched.filter((p) => !inHead.has(p));
  for (let i = 0; i < added.length; i += 500)
    await git.raw(['rm', '-q', '--cached', '--ignore-unmatch', '--', ...spec(added.slice(i, i + 500))]);
  for (const p of added) await rm(path.join(root, p), { force: true });
}

async function applies(git: SimpleGit, args: string[]): Promise<boolean> {
  try {
    await git.raw(['apply', ...args]);
    return true;
  } catch {
    return false;
  }
}

/**
 * The paths a patch writes, put back as HEAD has them in a worktree just made and prepared: a
 * tracked one checked out, an untracked one removed (never through a link: a folder on its way
 * that is not a real folder of the worktree keeps it, and the patch then says `conflict`).
 */
async function clearPathsOf(git: SimpleGit, dir: string, patch: string): Promise<void> {
  const paths = await pathsOfPatch(git, patch);
  if (paths.length === 0) return;
  const tracked = new Set(
    (await git.raw(['ls-tree', '-r', '-z', '--name-only', 'HEAD', '--', ...paths])).split('\0').filter(Boolean),
  );
  const checkout = paths.filter((p) => tracked.has(p));
  if (checkout.length > 0) await git.raw(['checkout', 'HEAD', '--', ...checkout]);
  for (const p of paths.filter((p) => !tracked.has(p))) removeUntracked(dir, p);
}

/** The paths a patch file writes, as git reads it (never one that climbs out). */
async function pathsOfPatch(git: SimpleGit, patch: string): Promise<string[]> {
  if ((await stat(patch)).size === 0) return [];
  const listed = await git.raw(['apply', '--numstat', '-z', patch]);
  return listed
    .split('\0')
    .map((entry) => entry.split('\t').slice(2).join('\t'))
    .filter((p) => p.length > 0 && !p.split('/').includes('..'));
}

/** An untracked file of the worktree removed, only through real folders of it; anything else stays. */
function removeUntracked(dir: string, rel: string): void {
  const parts = rel.split('/');
  for (let i = 1; i < parts.length; i++) {
    const st = lstatIfThere(path.join(dir, ...parts.slice(0, i)));
    if (!st || !st.isDirectory()) return;
  }
  const st = lstatIfThere(path.join(dir, rel));
  if (st && !st.isDirectory()) unlinkSync(path.join(dir, rel));
}

/** Its lstat, or null when it cannot be read (gone, or anything else: then nothing is removed). */
function lstatIfThere(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}
