/**
 * Saved work put back into a new clone on an SSH target [R6.10], as on a host worktree
 * (git/saved-work.ts): the host repository, which holds the saved commit, writes its work as a
 * binary patch; the target applies it in one `git apply` after `git apply --check`, all of it or
 * nothing. Only the hardened `g` runs there, on the service's own patch.
 */
import type { SshTarget } from './connection';
import { absolutePath, RemoteOperationError, runScript, script } from './remote-scripts';

/**
 * restoreRemoteWork. Args: clonePath. Stdin: the patch. Prints `applied` or `conflict` (nothing
 * was changed); a patch already in place (a retried restore) is `applied`. Exit 10: not a folder.
 */
export const RESTORE_WORK = script(
  'restore work',
  `
real_dir "$1" || exit 10
patch=$(mktemp) || exit 11
out=conflict
if cat >"$patch"; then
  if [ ! -s "$patch" ]; then
    out=applied
  elif g -C "$1" apply --check -- "$patch" >/dev/null 2>&1; then
    if g -C "$1" apply -- "$patch" >/dev/null 2>&1; then out=applied; else out=failed; fi
  elif g -C "$1" apply --check --reverse -- "$patch" >/dev/null 2>&1; then
    out=applied
  fi
else
  out=failed
fi
rm -f -- "$patch"
[ "$out" != failed ] || exit 12
echo "$out"
`,
);

export async function restoreRemoteWork(
  target: SshTarget,
  clonePath: string,
  patch: Buffer,
): Promise<'applied' | 'conflict'> {
  const result = await runScript(target, RESTORE_WORK, [absolutePath(clonePath)], { stdin: patch });
  const outcome = result.stdout.toString('utf8').trim();
  if (result.code !== 0 || (outcome !== 'applied' && outcome !== 'conflict'))
    throw new RemoteOperationError('restore_failed');
  return outcome;
}
