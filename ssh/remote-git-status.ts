/**
 * Git status of a clone on an SSH target, read there in one round trip and read-only
 * (`--no-optional-locks`: not even the index is refreshed): branch, HEAD, ahead/behind the base
 * branch, and the files, in the same shape a host worktree's status has [R1.5].
 */
import { parsePorcelainZ, type FileStatus } from '../git/worktree-status';
import type { SshTarget } from './connection';
import { namedScript, runRemote } from './remote-exec';
import { REMOTE_GIT_FUNCTION } from './remote-git';

/** Args: the clone, the base branch. Prints branch, HEAD, "behind<TAB>ahead" each NUL-terminated, then the porcelain -z listing. */
const STATUS_SCRIPT = namedScript(
  'read git status',
  `
${REMOTE_GIT_FUNCTION}
cd -- "$1" 2>/dev/null || exit 3
b=$(g symbolic-ref --quiet --short HEAD 2>/dev/null || true)
h=$(g rev-parse --verify --quiet HEAD 2>/dev/null || true)
ab=$(g rev-list --left-right --count "refs/heads/$2...HEAD" 2>/dev/null || true)
printf "%s\\0%s\\0%s\\0" "$b" "$h" "$ab"
g --no-optional-locks status --porcelain=v1 -z --untracked-files=all || exit 4
`,
);

export interface RemoteGitStatus {
  branch: string | null;
  head: string | null;
  ahead: number;
  behind: number;
  files: FileStatus[];
}

/** The status, or null when the clone is not there (nothing to observe: the stored status stays). */
export async function readRemoteGitStatus(
  target: SshTarget,
  a: { repoPath: string; baseBranch: string },
): Promise<RemoteGitStatus | null> {
  const result = await runRemote(target, STATUS_SCRIPT, [a.repoPath, a.baseBranch]);
  if (result.code === 3) return null;
  if (result.code !== 0) throw new Error('git status failed on the SSH target');
  const out = result.stdout.toString('utf8');
  const [branch, head, counts] = out.split('\0', 3);
  const rest = out.split('\0').slice(3).join('\0');
  const [behind, ahead] = (counts ?? '').trim().split(/\s+/).map(Number);
  return {
    branch: branch || null,
    head: head || null,
    ahead: Number.isFinite(ahead) ? ahead! : 0,
    behind: Number.isFinite(behind) ? behind! : 0,
    files: parsePorcelainZ(rest),
  };
}
