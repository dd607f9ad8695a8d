/**
 * The repository the service's git works on at a folder, named exactly: git is given
 * its git dir, common dir and work tree (GIT_DIR, GIT_COMMON_DIR, GIT_WORK_TREE), so it discovers
 * nothing and follows no pointer an agent could have written, and the config reader
 * (git/repository-config.ts) reads the very files git reads.
 *
 * - A checkout (`<dir>/.git` a folder): that folder, and `dir` as the work tree.
 * - A linked worktree (`<dir>/.git` a file): its registration `<common>/worktrees/<id>` is followed
 *   only when both pointers are the service's own: the `.git` file and the registration's `gitdir`
 *   are regular files owned by this process's user (an agent runs as another uid and has no
 *   capability: it can write neither), `gitdir` names exactly `<dir>/.git`, and the common dir is
 *   the folder above `worktrees/` (the `commondir` file is never read). Anything else is refused
 *   (UntrustedWorktree): the command does not run.
 * - Anything else (a folder inside a checkout, a bare repository, no repository): git's own
 *   discovery, as before; git refuses a repository owned by another user there (safe.directory is
 *   set nowhere), so a repository an agent made is never entered.
 */
import { lstatSync, readFileSync, type Stats } from 'node:fs';
import path from 'node:path';

export class UntrustedWorktree extends Error {
  constructor(reason: string) {
    super(`the worktree's registration is not the service's own (${reason}): git does not run there`);
    this.name = 'UntrustedWorktree';
  }
}

export interface PinnedRepository {
  gitDir: string;
  commonDir: string;
  workTree: string;
}

const lstatOrNull = (p: string): Stats | null => {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
};

const serviceUid = (): number => process.getuid?.() ?? 0;

function serviceFile(p: string): string {
  const st = lstatOrNull(p);
  if (!st?.isFile()) throw new UntrustedWorktree('a pointer is not a plain file');
  if (st.uid !== serviceUid()) throw new UntrustedWorktree('a pointer is not owned by the service');
  return readFileSync(p, 'utf8');
}

export function pinnedRepository(dir: string): PinnedRepository | null {
  const workTree = path.resolve(dir);
  const dotGit = path.join(workTree, '.git');
  const st = lstatOrNull(dotGit);
  if (st?.isDirectory()) return { gitDir: dotGit, commonDir: dotGit, workTree };
  if (!st?.isFile()) return null;
  const match = /^gitdir: (.*)\n?$/.exec(serviceFile(dotGit));
  if (!match) throw new UntrustedWorktree('the .git file names no git dir');
  const gitDir = path.resolve(workTree, match[1]!);
  const worktrees = path.dirname(gitDir);
  if (path.basename(worktrees) !== 'worktrees') throw new UntrustedWorktree('the git dir is no registration');
  if (!lstatOrNull(gitDir)?.isDirectory()) throw new UntrustedWorktree('the registration is not a folder');
  if (serviceFile(path.join(gitDir, 'gitdir')).trim() !== dotGit)
    throw new UntrustedWorktree('the registration names another worktree');
  return { gitDir, commonDir: path.dirname(worktrees), workTree };
}
