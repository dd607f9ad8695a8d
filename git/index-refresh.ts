/**
 * A worktree's index refreshed by its owner once its files changed hands. A `chown -R` changes every
 * file's owner and ctime, which the index's stat data record: until the index is written again,
 * every status, every audit before a removal and `git worktree remove` itself re-read every file
 * of the worktree (1.2 s of a 62,000-file worktree, where a fresh index reads in 0.13 s), and the
 * service's own git never writes it (GIT_OPTIONAL_LOCKS=0). Refreshed once at the hand-over, before
 * any agent runs in it, the stat data match again; a file changed afterwards differs from them as
 * it would in any worktree, so nothing a dirty check sees is lost.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { gitEnvironment } from './git-environment';

const execFileAsync = promisify(execFile);

/**
 * `git update-index -q --refresh` in `worktree`, run as `uid` (the owner of its index, which it
 * writes in place: its owner and mode stay what they were), in the hardened environment: no hook,
 * filter or driver of the repository runs, and the process has only the agent's own rights.
 * `-q`: an entry whose content really differs is left as it is (still seen as changed), not an error.
 */
export async function refreshIndexAs(worktree: string, uid: number, binary: string): Promise<void> {
  await execFileAsync(binary, ['update-index', '-q', '--refresh'], {
    cwd: worktree,
    env: gitEnvironment(worktree),
    uid,
    gid: uid,
    maxBuffer: 16 * 1024 * 1024,
  });
}
