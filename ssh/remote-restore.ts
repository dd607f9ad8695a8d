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
 * restoreRemoteWork. Args: clonePath wholeBytes stagedBytes restBytes. Stdin: the three patches one
 * after the other, then the paths to put back to HEAD first (each ended by NUL; none unless the
 * clone was prepared: a tracked one checked out, an untracked one removed, never through a link).
 * Prints `applied` or `conflict` (nothing was changed); a patch already in place (a retried restore,
 * also one that stopped between its parts) is `applied`. Exit 10: not a folder; 12: git failed
 * writing a part that fits (the staged part it wrote is taken back).
 */
export const RESTORE_WORK = script(
  'restore work',
  `
real_dir "$1" || exit 10
clone=$1
ap() { g -C "$clone" apply "$@" >/dev/null 2>&1; }
d=$(mktemp -d) || exit 11
all=$d/all whole=$d/whole staged=$d/staged rest=$d/rest clear=$d/clear
out=
if cat >"$all" && head -c "$2" "$all" >"$whole" && tail -c +$(($2 + 1)) "$all" | head -c "$3" >"$staged" && tail -c +$(($2 + $3 + 1)) "$all" | head -c "$4" >"$rest" && tail -c +$(($2 + $3 + $4 + 1)) "$all" >"$clear"; then
  parts="staged rest"
  if [ -s "$whole" ] && [ -s "$clear" ]; then
    paths=()
    while IFS= read -r -d "" p; do paths+=("$p"); done <"$clear"
    tracked=()
    while IFS= read -r -d "" p; do tracked+=("$p"); done < <(GIT_LITERAL_PATHSPECS=1 g -C "$clone" ls-tree -r -z --name-only HEAD -- "\${paths[@]}" 2>/dev/null)
    declare -A is_tracked=()
    for p in "\${tracked[@]}"; do is_tracked[$p]=1; done
    if [ "\${#tracked[@]}" -gt 0 ]; then GIT_LITERAL_PATHSPECS=1 g -C "$clone" checkout HEAD -- "\${tracked[@]}" >/dev/null 2>&1 || out=failed; fi
    for p in "\${paths[@]}"; do
      case "/$p/" in */../*) continue ;; esac
      [ -z "\${is_tracked[$p]:-}" ] || continue
      # Only through real folders of the clone; anything else stays (the patch then says conflict).
      rest_path=$p way=$clone ok=1
      while [[ "$rest_path" == */* ]]; do
        way="$way/\${rest_path%%/*}"; rest_path=\${rest_path#*/}
        real_dir "$way" || { ok=0; break; }
      done
      if [ "$ok" = 1 ] && { [ -L "$clone/$p" ] || [ -f "$clone/$p" ]; }; then rm -f -- "$clone/$p"; fi
    done
  fi
  if [ -n "$out" ]; then :
  elif [ ! -s "$whole" ]; then
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
  /** The clone was prepared (copied files, a setup): the paths the patch writes go back to HEAD first, so the saved work wins. */
  overPreparation = false,
): Promise<'applied' | 'conflict'> {
  const clear = overPreparation
    ? patches.paths
        .filter((p) => !p.includes('\0'))
        .map((p) => `${p}\0`)
        .join('')
    : '';
  const result = await runScript(
    target,
    RESTORE_WORK,
    [absolutePath(clonePath), String(patches.whole.length), String(patches.staged.length), String(patches.rest.length)],
    { stdin: Buffer.concat([patches.whole, patches.staged, patches.rest, Buffer.from(clear, 'utf8')]) },
  );
  const outcome = result.stdout.toString('utf8').trim();
  if (result.code !== 0 || (outcome !== 'applied' && outcome !== 'conflict'))
    throw new RemoteOperationError('restore_failed');
  return outcome;
}
