/**
 * A task's diff in one repository [R8.1]: the committed part (merge base of the task branch with
 * its base, to the branch's head) read in the source repository, then the uncommitted part: the
 * active worktree against its HEAD and its untracked files, or a released task's saved work
 * against the HEAD it was saved on. Read-only: every command reads (no `add -N`, no
 * `update-index`, GIT_OPTIONAL_LOCKS=0 so a status never writes the index back), every diff runs
 * with `--no-textconv --no-ext-diff` (a driver an attribute names is never run: the file is
 * diffed as it is), and names travel NUL-separated after `--`, so any file name is read exactly.
 * Outputs are bounded (git/diff-output.ts): the answer is cut, never unbounded.
 */
import {
  cutPatch,
  filesOf,
  untrackedFile,
  type DiffBudget,
  type DiffFile,
  type RepositoryDiff,
} from '../domain/task-diff';
import type { DiffSource } from '../domain/task-diff';
import { branchCommit, resolveCommit } from './branches';
import { boundedGit } from './diff-output';
import { gitAt, gitExitCode, run, type GitOptions } from './git';

/** Whatever the user's or the repository's configuration says, the same patch: prefixes, renames, no colour. */
const DIFF_FLAGS = [
  '--no-textconv',
  '--no-ext-diff',
  '--no-color',
  '--no-relative',
  '-M',
  '--src-prefix=a/',
  '--dst-prefix=b/',
];
/**
 * A name past ASCII is written in the patch as it is (UTF-8), not as octal escapes: the patch is
 * read by people (the console's fallback text, `tws diff --patch`) and git apply takes both. Names
 * with a `"`, a backslash or a control character are still quoted, as git must.
 */
const UTF8_NAMES = ['-c', 'core.quotePath=false'];
/** The most a listing of one file can take (its raw record and its counts: four paths of PATH_MAX at most). */
const LISTING_BYTES_PER_FILE = 16_800;
/** Untracked files are diffed this many at a time (one `diff --no-index` each). */
const UNTRACKED_AT_ONCE = 4;

export interface DiffAsk {
  patch: boolean;
  path?: string;
}

interface Part {
  /** Where the command runs (the source repository, or the worktree). */
  dir: string;
  /** The two sides, as `git diff` takes them (`[HEAD]` alone: the worktree against its HEAD). */
  sides: string[];
  uncommitted: boolean;
}

export async function readRepositoryDiff(
  source: DiffSource,
  ask: DiffAsk,
  budget: DiffBudget,
  options: GitOptions,
): Promise<RepositoryDiff> {
  const git = gitAt(source.sourcePath, options);
  const [head, baseHead] = await Promise.all([
    source.taskBranch ? branchCommit(git, source.taskBranch) : null,
    branchCommit(git, source.baseBranch),
  ]);
  const answer: RepositoryDiff = {
    repositoryId: source.repositoryId,
    baseBranch: source.baseBranch,
    mergeBase: null,
    head,
    ahead: 0,
    behind: 0,
    files: [],
    ...(ask.patch ? { patch: '' } : {}),
    truncated: false,
  };
  if (head === null) return answer; // no branch yet: nothing of the task's to show
  if (baseHead !== null) {
    answer.mergeBase = await mergeBase(git, baseHead, head);
    const counts = (await run(git, ['rev-list', '--left-right', '--count', `${baseHead}...${head}`])).trim();
    const [behind, ahead] = counts.split(/\s+/).map(Number);
    answer.ahead = ahead ?? 0;
    answer.behind = behind ?? 0;
  }
  // A branch with no history in common with its base: all of it is the task's.
  const from = answer.mergeBase ?? (await run(git, ['hash-object', '-t', 'tree', '/dev/null'])).trim();

  const parts: Part[] = [{ dir: source.sourcePath, sides: [from, head], uncommitted: false }];
  let worktree: string | null = null;
  if (source.worktreePath && (await resolveCommit(gitAt(source.worktreePath, options), 'HEAD'))) {
    worktree = source.worktreePath;
    parts.push({ dir: worktree, sides: ['HEAD'], uncommitted: true });
  } else {
    for (const saved of source.savedCommits)
      parts.push({ dir: source.sourcePath, sides: [`${saved}^1`, saved], uncommitted: true });
  }

  const pathspec = ask.path === undefined ? [] : [`:(literal)${ask.path}`];
  // What may still be read of patches: each read takes from it at once (reads run side by side).
  const room = { bytes: budget.bytes };
  const patches: Buffer[] = [];
  for (const part of parts) {
    const listed = await listPart(part, pathspec, budget, options);
    answer.files.push(...listed.files);
    if (listed.cut) answer.truncated = true;
    if (ask.patch) patches.push(await patchOf(part.dir, [...part.sides, '--', ...pathspec], room, options));
  }
  if (worktree) {
    const untracked = await untrackedFiles(worktree, pathspec, budget, ask.patch ? room : null, options);
    answer.files.push(...untracked.files);
    if (untracked.cut) answer.truncated = true;
    patches.push(...untracked.patches);
  }
  if (ask.patch) {
    const cut = cutPatch(Buffer.concat(patches), budget.bytes);
    answer.patch = cut.text;
    budget.bytes -= Buffer.byteLength(cut.text);
    if (cut.cut) {
      answer.truncated = true;
      budget.bytes = 0; // nothing after a cut: a later repository's patch would not follow on
    }
  }
  return answer;
}

async function mergeBase(git: ReturnType<typeof gitAt>, a: string, b: string): Promise<string | null> {
  const out = await run(git, ['merge-base', a, b]).catch((err: unknown) => {
    if (gitExitCode(err) === 1) return ''; // no common history
    throw err;
  });
  return out.trim() || null;
}

/** One part's files, within what is left of the file allowance. */
async function listPart(
  part: Part,
  pathspec: string[],
  budget: DiffBudget,
  options: GitOptions,
): Promise<{ files: DiffFile[]; cut: boolean }> {
  const maxBytes = (budget.files + 1) * LISTING_BYTES_PER_FILE;
  // One pass gives both: the raw records (status, rename source) and then the counts.
  const listed = await boundedGit(
    part.dir,
    ['diff', ...DIFF_FLAGS, '--raw', '--numstat', '-z', ...part.sides, '--', ...pathspec],
    { ...options, maxBytes },
  );
  return take(filesOf(listed.out.toString('utf8'), part.uncommitted, listed.cut), budget, listed.cut);
}

function take(files: DiffFile[], budget: DiffBudget, cut: boolean): { files: DiffFile[]; cut: boolean } {
  const kept = files.slice(0, Math.max(0, budget.files));
  budget.files -= kept.length;
  return { files: kept, cut: cut || kept.length < files.length };
}

/** One part's patch, read no further than what is left to read (and one byte more, to know it was cut). */
async function patchOf(
  dir: string,
  sidesAndSpec: string[],
  room: { bytes: number },
  options: GitOptions,
): Promise<Buffer> {
  if (room.bytes < 0) return Buffer.alloc(0); // cut already
  const read = await boundedGit(dir, [...UTF8_NAMES, 'diff', ...DIFF_FLAGS, ...sidesAndSpec], {
    ...options,
    maxBytes: room.bytes + 1,
  });
  room.bytes -= read.out.length;
  return read.out;
}

/**
 * The worktree's untracked files (those `.gitignore` does not hide), each diffed against nothing
 * with `diff --no-index`: the index is never touched (no `add -N`), git reads a link as a link
 * and refuses anything but a file or a link.
 */
async function untrackedFiles(
  worktree: string,
  pathspec: string[],
  budget: DiffBudget,
  room: { bytes: number } | null,
  options: GitOptions,
): Promise<{ files: DiffFile[]; patches: Buffer[]; cut: boolean }> {
  const listed = await boundedGit(worktree, ['ls-files', '--others', '--exclude-standard', '-z', '--', ...pathspec], {
    ...options,
    maxBytes: (budget.files + 1) * LISTING_BYTES_PER_FILE,
  });
  const names = listed.out.toString('utf8').split('\0');
  names.pop(); // what followed the last NUL: nothing, or a name cut short
  const paths = names.slice(0, Math.max(0, budget.files));
  const files: DiffFile[] = new Array<DiffFile>(paths.length);
  const patches: Buffer[] = new Array<Buffer>(paths.length).fill(Buffer.alloc(0));
  const noIndex = (extra: string[], p: string, maxBytes: number) =>
    boundedGit(worktree, [...UTF8_NAMES, 'diff', '--no-index', ...DIFF_FLAGS, ...extra, '--', '/dev/null', p], {
      ...options,
      maxBytes,
      okCodes: [0, 1],
    });
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < paths.length; i = next++) {
      const p = paths[i]!;
      files[i] = untrackedFile(p, (await noIndex(['--numstat', '-z'], p, LISTING_BYTES_PER_FILE)).out.toString('utf8'));
      if (!room || room.bytes < 0) continue;
      const read = (await noIndex([], p, room.bytes + 1)).out;
      room.bytes -= read.length;
      patches[i] = read;
    }
  };
  await Promise.all(Array.from({ length: UNTRACKED_AT_ONCE }, worker));
  budget.files -= paths.length;
  return { files, patches, cut: listed.cut || paths.length < names.length };
}
