/**
 * The bash scripts the ssh executor runs on a remote machine, one per operation, each one SSH
 * round trip. They are constants: every value (a path, a branch, the marker text, an argv) is an
 * argument ("$1"...), delivered by the transport over the channel, never in a command string. A
 * script reports facts through a distinct exit code or stdout token per outcome; the TypeScript
 * side decides what they mean and maps them to typed results (the tables below).
 *
 * What the remote must have: bash (4+), git (2.x), GNU coreutils (mktemp, realpath -e, mv -T,
 * tail -c, base64 -w0, readlink -z, date +%3N, sync FILE), util-linux `setsid` (with --fork), and
 * Linux `/proc` (process identity is the pid plus field 22 of /proc/<pid>/stat, as on the
 * service's host). Nothing else: no git server, no worker, no node.
 *
 * Fail closed: a path that cannot be examined is present (never absent), a marker that cannot be
 * read is someone else's, a status git cannot read is dirty.
 *
 * The transport forbids a single quote anywhere in a script (comments included), and `${` would
 * be a template interpolation here, so bash braces are written `\${`.
 *
 * The scripts that make, read and undo a workspace are here; those that bring its work back and
 * remove it are in ssh/cleanup-scripts.ts, the agent's in ssh/agent-scripts.ts.
 */
import { OWNERSHIP_MARKER_FILE } from '../domain/task-layout';
import { REMOTE_GIT_FUNCTION } from './remote-git';
import { SshRefusal, type SshTarget } from './connection';
import { namedScript, runRemote, type RemoteResult } from './remote-exec';

/** A remote operation that did not succeed, by a short reason: never a path, a branch name or git's stderr. */
export class RemoteOperationError extends Error {
  constructor(public readonly reason: string) {
    super(`remote operation failed: ${reason}`);
    this.name = 'RemoteOperationError';
  }
}

const MARKER_FILE_NAME = OWNERSHIP_MARKER_FILE;

/**
 * Shared helpers, prepended to every script.
 * - `g`: git that runs no program a clone may configure (the clone is the agent's): ssh/remote-git.ts.
 * - `present`: 1 only when the path is known to be absent (ENOENT, ENOTDIR); a path that cannot be
 *   examined (permission, I/O) counts as present.
 * - `real_dir`: a directory that is not a symlink.
 * - `marker_is`: the marker is a regular file holding exactly the given bytes (compared raw with
 *   cmp: `$(cat)` would strip its trailing newline).
 * - `clone_check`: prints why a path is not the expected clean clone (nothing when it is).
 */
const PRELUDE = `set -u
${REMOTE_GIT_FUNCTION}
present() {
  local err
  if [ -e "$1" ] || [ -L "$1" ]; then return 0; fi
  err=$(LC_ALL=C stat -- "$1" 2>&1 >/dev/null) && return 0
  case "$err" in *"No such file or directory"*|*"Not a directory"*) return 1 ;; esac
  return 0
}
real_dir() { [ -d "$1" ] && [ ! -L "$1" ]; }
marker_is() { [ -f "$1" ] && [ ! -L "$1" ] && cmp -s -- "$1" <(printf "%s" "$2"); }
clone_check() {
  local top real st
  real_dir "$1" || { echo not_a_directory; return; }
  top=$(g -C "$1" rev-parse --show-toplevel 2>/dev/null) && top=$(realpath -e -- "$top" 2>/dev/null) && real=$(realpath -e -- "$1" 2>/dev/null) && [ "$top" = "$real" ] || { echo not_a_checkout; return; }
  [ "$(g -C "$1" symbolic-ref --quiet HEAD 2>/dev/null)" = "refs/heads/$2" ] || { echo other_branch; return; }
  [ "$(g -C "$1" rev-parse --verify --quiet HEAD 2>/dev/null)" = "$3" ] || { echo moved; return; }
  if [ -n "\${4:-}" ]; then
    # Saved first (a consented delete): removable only while it is exactly what was saved.
    g -C "$1" add --all >/dev/null 2>&1 && [ "$(g -C "$1" write-tree 2>/dev/null)" = "$(g -C "$1" rev-parse --verify --quiet "$4^{tree}" 2>/dev/null)" ] || { echo dirty; return; }
  else
    st=$(g -C "$1" --no-optional-locks status --porcelain --untracked-files=all 2>/dev/null) && [ -z "$st" ] || { echo dirty; return; }
  fi
  # A stash lives only in the clone: removing it would lose that work.
  if g -C "$1" rev-parse --verify --quiet refs/stash >/dev/null 2>&1; then echo dirty; return; fi
}
# The folder holding a clone is the task folder itself (symlinks resolved), so the marker speaks for it.
in_folder() {
  local parent folder
  parent=$(realpath -e -- "$(dirname -- "$1")" 2>/dev/null) && folder=$(realpath -e -- "$2" 2>/dev/null) && [ "$parent" = "$folder" ]
}
# Prints removed | kept | already_gone. The marker goes only when it is ours and nothing else is
# left; rmdir (never a recursive delete) is the last word, and the marker is put back when
# something appeared meanwhile.
remove_folder_if_empty() {
  local folder=$1 text=$2 marker="$1/${MARKER_FILE_NAME}" had_marker=0 entry
  present "$folder" || { echo already_gone; return; }
  real_dir "$folder" && [ -r "$folder" ] && [ -x "$folder" ] || { echo kept; return; }
  if present "$marker"; then marker_is "$marker" "$text" || { echo kept; return; }; had_marker=1; fi
  for entry in "$folder"/* "$folder"/.[!.]* "$folder"/..?*; do
    [ -e "$entry" ] || [ -L "$entry" ] || continue
    [ "$entry" = "$marker" ] || { echo kept; return; }
  done
  [ "$had_marker" = 0 ] || rm -f -- "$marker"
  if rmdir -- "$folder" 2>/dev/null; then echo removed; return; fi
  [ "$had_marker" = 0 ] || printf "%s" "$text" >"$marker"
  echo kept
}
`;

/** A script of one operation, with the prelude, named for its spans (`ssh materialize slot`). */
export const script = (name: string, body: string): string => namedScript(name, PRELUDE + body);

/**
 * materializeRemoteSlot. Args: taskFolder markerText repoPath branch baseBranch mode, where mode
 * is the host's decision from the refs it bundled: checkout (the bundle has the branch), create
 * (from the base), or the refusal branch_missing / base_missing (used only when there is nothing
 * to adopt). Stdin: the git bundle (drained unread when refusing or adopting, so the sender never
 * meets a closed channel). A refusal writes nothing: the folder and the marker are made only
 * right before a clone, and a clone that fails takes them away again when nothing else is there.
 * The clone is made in a temporary folder inside the task folder and moved into place in one
 * rename, so repoPath is either absent or a whole clone. Prints `adopted <head>` or `created <head>`.
 */
export const MATERIALIZE_SLOT = script(
  'materialize slot',
  `
folder=$1 text=$2 repo=$3 branch=$4 base=$5 mode=$6
marker="$folder/${MARKER_FILE_NAME}"
drain() { cat >/dev/null; }
if present "$folder" && ! real_dir "$folder"; then drain; exit 20; fi
ours=0
if present "$marker"; then marker_is "$marker" "$text" || { drain; exit 22; }; ours=1; fi
if present "$repo"; then
  drain
  # An idempotent re-run adopts the clone it made (under its own marker); anything else in the way is refused.
  [ "$ours" = 1 ] || exit 23
  reason=$(clone_check "$repo" "$branch" "$(g -C "$repo" rev-parse --verify --quiet HEAD 2>/dev/null)")
  case "$reason" in ""|dirty) ;; *) exit 23 ;; esac
  head=$(g -C "$repo" rev-parse --verify --quiet HEAD) || exit 23
  printf "adopted %s\\n" "$head"
  exit 0
fi
case "$mode" in
  checkout) start="refs/remotes/origin/$branch" ;;
  create) start="refs/remotes/origin/$base" ;;
  branch_missing) drain; exit 24 ;;
  base_missing) drain; exit 25 ;;
  *) drain; exit 26 ;;
esac
work=
done_ok=0
cleanup() {
  [ -z "$work" ] || rm -rf -- "$work"
  [ "$done_ok" = 1 ] || remove_folder_if_empty "$folder" "$text" >/dev/null
}
trap cleanup EXIT
mkdir -p -- "$folder" || { drain; exit 21; }
if [ "$ours" = 0 ]; then
  # Written aside, then linked into place: a create that never replaces a marker written meanwhile.
  tmp=$(mktemp "$marker.XXXXXX") || { drain; exit 21; }
  printf "%s" "$text" >"$tmp" && chmod 644 -- "$tmp" && ln -- "$tmp" "$marker" 2>/dev/null
  rm -f -- "$tmp"
  marker_is "$marker" "$text" || { drain; exit 22; }
fi
work=$(mktemp -d "$folder/.tws-clone.XXXXXX") || { drain; exit 21; }
cat >"$work/bundle" || exit 27
g clone --quiet --no-checkout -- "$work/bundle" "$work/repo" >/dev/null 2>&1 || exit 27
g -C "$work/repo" rev-parse --verify --quiet "$start^{commit}" >/dev/null || exit 27
g -C "$work/repo" checkout --quiet --no-track -b "$branch" "$start" >/dev/null 2>&1 || exit 28
# The base as a local branch too: removing origin removes its remote-tracking refs.
if [ "$base" != "$branch" ] && g -C "$work/repo" rev-parse --verify --quiet "refs/remotes/origin/$base" >/dev/null; then
  g -C "$work/repo" branch --quiet --no-track -- "$base" "refs/remotes/origin/$base" || exit 28
fi
g -C "$work/repo" remote remove origin || exit 28
mkdir -p -- "$(dirname -- "$repo")" || exit 21
present "$repo" && exit 23
mv -T -- "$work/repo" "$repo" 2>/dev/null || exit 23
head=$(g -C "$repo" rev-parse --verify --quiet HEAD) || exit 28
done_ok=1
printf "created %s\\n" "$head"
`,
);

export const MATERIALIZE_REFUSALS: Record<number, string> = {
  20: 'folder_not_directory',
  21: 'folder_uncreatable',
  22: 'marker_other',
  23: 'occupied',
  24: 'branch_missing',
  25: 'base_missing',
  26: 'bad_mode',
  27: 'bundle_unreadable',
  28: 'checkout_failed',
};

/**
 * discardRemoteSlots. Args: taskFolder markerText, then (repoPath branch headCommit) per slot.
 * Prints one token line per slot: removed | kept | absent. A slot is removed only when the marker
 * is ours, it lies in the task folder and is the clean clone the launch left. The marker goes only
 * when nothing was kept and nothing else is there (what stays keeps its owner), the folder only
 * when empty.
 */
export const DISCARD_SLOTS = script(
  'discard slots',
  `
folder=$1 text=$2
shift 2
marker="$folder/${MARKER_FILE_NAME}"
owned=0
marker_is "$marker" "$text" && owned=1
kept=0
while [ $# -ge 3 ]; do
  repo=$1 branch=$2 head=$3
  shift 3
  if ! present "$repo"; then echo absent; continue; fi
  if [ "$owned" = 1 ] && in_folder "$repo" "$folder" && [ -z "$(clone_check "$repo" "$branch" "$head")" ]; then
    rm -rf --one-file-system -- "$repo"
    if ! present "$repo"; then echo removed; continue; fi
  fi
  kept=1
  echo kept
done
if [ "$owned" = 1 ] && [ "$kept" = 0 ]; then remove_folder_if_empty "$folder" "$text" >/dev/null; else rmdir -- "$folder" 2>/dev/null; fi
exit 0
`,
);

/**
 * readRemoteWorkspace. Args: taskFolder workspacePath withDirty(0|1) repoPath...
 * Reads only: no fetch, no index refresh (--no-optional-locks). Prints NUL-terminated fields:
 * the marker (`m` + base64 of its bytes, `n` absent, `u` unreadable), the workspace (1|0), then per
 * slot: exists realDirectory toplevel branch head dirty, each value `=<text>` or `-` for null.
 */
export const READ_WORKSPACE = script(
  'read workspace',
  `
folder=$1 workspace=$2 with_dirty=$3
shift 3
marker="$folder/${MARKER_FILE_NAME}"
field() { printf "%s\\0" "$1"; }
value() { if [ $# -gt 0 ]; then printf "=%s\\0" "$1"; else printf -- "-\\0"; fi; }
if ! present "$marker"; then field n
elif [ -f "$marker" ] && [ ! -L "$marker" ] && m=$(base64 -w0 -- "$marker" 2>/dev/null); then field "m$m"
else field u
fi
if real_dir "$workspace"; then field 1; else field 0; fi
for repo in "$@"; do
  if ! present "$repo"; then
    field 0; field 0; value; value; value; value
    continue
  fi
  field 1
  if real_dir "$repo"; then field 1; else field 0; fi
  toplevel=0
  if top=$(g -C "$repo" rev-parse --show-toplevel 2>/dev/null) && top=$(realpath -e -- "$top" 2>/dev/null); then
    value "$top"
    [ "$top" = "$(realpath -e -- "$repo" 2>/dev/null)" ] && toplevel=1
  else value
  fi
  if b=$(g -C "$repo" symbolic-ref --quiet --short HEAD 2>/dev/null); then value "$b"; else value; fi
  if h=$(g -C "$repo" rev-parse --verify --quiet HEAD 2>/dev/null); then value "$h"; else value; fi
  # The status of a folder that is not a top level would be that of an enclosing repository: doubt.
  if [ "$with_dirty" != 1 ]; then value
  elif [ "$toplevel" != 1 ]; then value unreadable
  elif st=$(g -C "$repo" --no-optional-locks status --porcelain --untracked-files=all 2>/dev/null); then
    if [ -z "$st" ]; then value clean; else value dirty; fi
  else value unreadable
  fi
done
`,
);

/**
 * Runs one script; arguments are checked here (no NUL byte, which no argument can carry). A
 * refusal of the transport (SshRefusal: the target is down or not the pinned host) passes through
 * typed; any other failure of the transport (a reply past its size cap, a stdin that failed) is
 * a RemoteOperationError.
 */
export async function runScript(
  target: SshTarget,
  source: string,
  args: string[],
  opts?: { stdin?: Buffer | NodeJS.ReadableStream; timeoutMs?: number },
): Promise<RemoteResult> {
  if (args.some((arg) => arg.includes('\0'))) throw new RemoteOperationError('invalid_argument');
  let result: RemoteResult;
  try {
    result = await runRemote(target, source, args, { timeoutMs: 60_000, ...opts });
  } catch (err) {
    if (err instanceof SshRefusal) throw err;
    throw new RemoteOperationError('transport_failed');
  }
  if (result.code === null) throw new RemoteOperationError('remote_interrupted');
  return result;
}

/** A path argument: absolute, so no script ever reads it as an option or relative to its home. */
export function absolutePath(value: string): string {
  if (!value.startsWith('/') || value.includes('\0')) throw new RemoteOperationError('invalid_path');
  return value;
}
