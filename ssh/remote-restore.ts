/**
 * Saved work put back into a new clone on an SSH target [R6.10], exactly as on a host worktree
 * (git/saved-work.ts restoreSavedWork): the host repository, which holds the saved commit, writes
 * its work as binary patches (the whole, the part that was staged, the rest); the target checks the
 * whole with `git apply --check`, then applies the staged part to the index and the files and the
 * rest to the files alone, so the index comes back as it was, or nothing. Only the hardened `g`
 * runs there, on the service's own patches.
 */
import type { SshTarget } from './connection';
import type { SavedWorkPatches } from '../git/saved-work';
import { absolutePath, RemoteOperationError, runScript, script } from './remote-scripts';

/**
 * restoreRemoteWork. Args: clonePath wholeBytes stagedBytes. Stdin: the three patches one after
 * the other. Prints `applied` or `conflict` (nothing was changed); a patch already in place (a
 * retried restore, also one that stopped between its parts) is `applied`. Exit 10: not a folder;
 * 12: git failed writing a part that fits (the staged part it wrote is taken back).
 */
export const RESTORE_WORK = script(
  'restore work',
  `
real_dir "$1" || exit 10
clone=$1
ap() { g -C "$clone" apply "$@" >/dev/null 2>&1; }
d=$(mktemp -d) || exit 11
all=$d/all whole=$d/whole staged=$d/staged rest=$d/rest
out=
if cat >"$all" && head -c "$2" "$all" >"$whole" && tail -c +$(($2 + 1)) "$all" | head -c "$3" >"$staged" && tail -c +$(($2 + $3 + 1)) "$all" >"$rest"; then
  parts="staged rest"
  if [ ! -s "$whole" ]; then
    out=applied
  elif ! ap --check -- "$whole"; then
    if ap --check --reverse -- "$whole"; then out=applied
    elif [ -s "$staged" ] && ap --check --reverse --index -- "$staged" && ap --check -- "$rest"; then parts=rest
    else out=conflict
    fi
  fi
  for part in $parts; do
    [ -z "$out" ] || break
    if [ "$part" = staged ]; then file=$staged flag=--index; else file=$rest flag=; fi
    [ -s "$file" ] || continue
    if ! ap --check $flag -- "$file"; then
      out=conflict
    elif ! ap $flag -- "$file"; then
      out=failed
    fi
    # The staged part is in and the rest does not go: the clone goes back to what it was.
    if [ -n "$out" ] && [ "$part" = rest ] && [ "$parts" != rest ] && [ -s "$staged" ]; then ap --reverse --index -- "$staged" || out=failed; fi
  done
  [ -n "$out" ] || out=applied
else
  out=failed
fi
rm -rf -- "$d"
[ "$out" != failed ] || exit 12
echo "$out"
`,
);

export async function restoreRemoteWork(
  target: SshTarget,
  clonePath: string,
  patches: SavedWorkPatches,
): Promise<'applied' | 'conflict'> {
  const result = await runScript(
    target,
    RESTORE_WORK,
    [absolutePath(clonePath), String(patches.whole.length), String(patches.staged.length)],
    { stdin: Buffer.concat([patches.whole, patches.staged, patches.rest]) },
  );
  const outcome = result.stdout.toString('utf8').trim();
  if (result.code !== 0 || (outcome !== 'applied' && outcome !== 'conflict'))
    throw new RemoteOperationError('restore_failed');
  return outcome;
}
