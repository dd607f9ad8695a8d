/**
 * Uncommitted work of every kind, for the tests of saving and restoring it (idle release, abandon,
 * consented delete; on a host worktree and on an SSH clone): a modified, a staged, a deleted, a
 * newly added (then changed again) and an untracked file with bytes that are not text, and two
 * ignored ones, a hand-written file (saved) and dependencies (rebuilt: left out).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fingerprint, git } from './world';

/** A repository's files for it (makeRepo's `files`). */
export const WORK_REPO_FILES = {
  'README.md': '# idle\n',
  'src/keep.txt': 'keep\n',
  'src/gone.txt': 'to be deleted\n',
  '.gitignore': '.env\nnode_modules/\n',
};

export function makeWork(worktree: string): void {
  writeFileSync(path.join(worktree, 'README.md'), '# idle\nedited, not staged\n');
  writeFileSync(path.join(worktree, 'src/keep.txt'), 'keep, and staged\n');
  git(worktree, 'add', 'src/keep.txt');
  rmSync(path.join(worktree, 'src/gone.txt'));
  writeFileSync(path.join(worktree, 'src/added.txt'), 'added, staged\n');
  git(worktree, 'add', 'src/added.txt');
  writeFileSync(path.join(worktree, 'src/added.txt'), 'added, staged\nthen changed again\n');
  mkdirSync(path.join(worktree, 'notes'));
  writeFileSync(path.join(worktree, 'notes/untracked.bin'), Buffer.from([0, 1, 2, 255, 10, 13, 0]));
  writeFileSync(path.join(worktree, '.env'), 'SECRET_OF_MINE=1\n');
  mkdirSync(path.join(worktree, 'node_modules/pkg'), { recursive: true });
  writeFileSync(path.join(worktree, 'node_modules/pkg/index.js'), 'module.exports = 1;\n');
}

/** What a restore compares: every file but git's own and the rebuilt dependencies a save leaves out. */
export const workOf = (worktree: string): string => fingerprint(worktree, ['.git', 'node_modules']);

/** What git says is staged, what is changed beside the index, and what is untracked. */
export const statusOf = (worktree: string) => ({
  staged: git(worktree, 'diff', '--cached', '--name-status'),
  unstaged: git(worktree, 'diff', '--name-status'),
  untracked: git(worktree, 'ls-files', '--others', '--exclude-standard'),
});

/** statusOf for makeWork's work. */
export const WORK_STATUS = {
  staged: 'A\tsrc/added.txt\nM\tsrc/keep.txt',
  unstaged: 'M\tREADME.md\nM\tsrc/added.txt\nD\tsrc/gone.txt',
  untracked: 'notes/untracked.bin',
};
