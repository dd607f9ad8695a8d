/**
 * Committing a task's uncommitted work on its branch when the caller asks a merge to (`commitUncommitted`)
 * [R8.3]. The commit is made through an index of its own (the worktree's index is its agent's and is
 * not written while the tree is read), the branch moves by compare-and-set from the HEAD it was made
 * on, and the worktree's index then follows its branch, owned as before: the worktree reads clean
 * and its files are untouched.
 */
import { chown, chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { GitIdentity } from '../domain/merge';
import { branchRef, resolveCommit } from './branches';
import { gitAt, run } from './git';
import { commitTree, moveRef } from './merge-commits';
import { pinnedRepository } from './pinned-repository';

export async function commitWorktreeWork(
  dir: string,
  branch: string,
  input: { identity: GitIdentity; message: string; binary: string },
): Promise<string | null> {
  const pinned = pinnedRepository(dir);
  if (!pinned) throw new Error('the worktree has no repository of its own');
  // The index's owner and mode, read before anything moves: an index that cannot be read refuses here.
  const index = await indexOwnership(pinned.gitDir);
  const head = await resolveCommit(gitAt(dir, { binary: input.binary }), branchRef(branch));
  if (!head) throw new Error('the task branch is missing');
  const scratch = await mkdtemp(path.join(tmpdir(), 'tws-commit-'));
  try {
    const git = gitAt(dir, { binary: input.binary, environment: { GIT_INDEX_FILE: path.join(scratch, 'index') } });
    await run(git, ['read-tree', head]);
    await run(git, ['add', '--all']);
    const tree = (await run(git, ['write-tree'])).trim();
    if (tree === (await run(git, ['rev-parse', `${head}^{tree}`])).trim()) return null;
    const commit = await commitTree(dir, input.binary, input.identity, {
      tree,
      parents: [head],
      message: input.message,
    });
    if ((await moveRef(git, branchRef(branch), commit, head, 'task-workspaces: commit uncommitted work')) === 'stale')
      throw new Error('the task branch moved while its work was committed');
    await indexFollowsBranch(dir, pinned.gitDir, index, input.binary);
    return commit;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** `reset --mixed`: the index is the branch's, the files as they are; the index file keeps its owner and mode. */
async function indexFollowsBranch(dir: string, gitDir: string, before: Stats | null, binary: string): Promise<void> {
  const indexPath = path.join(gitDir, 'index');
  await run(gitAt(dir, { binary, environment: { GIT_OPTIONAL_LOCKS: '1' } }), ['reset', '-q', '--mixed']);
  if (before) {
    await chown(indexPath, before.uid, before.gid);
    await chmod(indexPath, before.mode & 0o7777);
  }
}

/** The worktree's index as it is (null: it has none yet); any other failure to read it is thrown. */
async function indexOwnership(gitDir: string): Promise<Stats | null> {
  try {
    return await stat(path.join(gitDir, 'index'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
