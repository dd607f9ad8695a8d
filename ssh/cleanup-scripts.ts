/**
 * The scripts of a remote workspace's end: bringing its work back to the host (the heads the
 * host lacks, the saved work, the branch, as bundles) and the audited removal of its clones and
 * task folder. How they run and what a target must have: ssh/remote-scripts.ts.
 */
import { OWNERSHIP_MARKER_FILE } from '../domain/task-layout';
import { MEASURE_WORKSPACE } from './remote-disk';
import { RESTORE_WORK } from './remote-restore';
import { DISCARD_SLOTS, MATERIALIZE_SLOT, READ_WORKSPACE, script } from './remote-scripts';

const MARKER_FILE_NAME = OWNERSHIP_MARKER_FILE;

/**
 * Commits need an identity; a remote without one configured gets this one for the commits the
 * service itself makes there (the saved-work commit), as git would refuse otherwise.
 */
const IDENTITY = `
g config user.name >/dev/null || export GIT_AUTHOR_NAME=task-workspaces GIT_COMMITTER_NAME=task-workspaces
g config user.email >/dev/null || export GIT_AUTHOR_EMAIL=task-workspaces@localhost GIT_COMMITTER_EMAIL=task-workspaces@localhost
`;

/**
 * The first trip of bringing work back. Args: repoPath branch (empty: none). Prints the branch
 * commit (`-` when there is no branch asked or it does not exist), then the commit of every local
 * branch, one a line: the host names those it has, and the bundle leaves them out.
 */
export const LOCAL_HEADS = script(
  'read local heads',
  `
real_dir "$1" || exit 10
if [ -n "$2" ] && c=$(g -C "$1" rev-parse --verify --quiet "refs/heads/$2^{commit}"); then echo "$c"; else echo -; fi
g -C "$1" for-each-ref --format="%(objectname)" refs/heads/ || exit 10
`,
);

/**
 * The ignored paths of a clone, for the host to choose which a save keeps (domain/rebuildable.ts).
 * Args: repoPath. Prints them NUL-separated, from the clone's top, an ignored folder once (with a
 * trailing `/`), as git/saved-work.ts lists them on the host.
 */
export const IGNORED_PATHS = script(
  'list ignored paths',
  `
real_dir "$1" || exit 10
g -C "$1" ls-files -z --others --ignored --exclude-standard --directory || exit 11
`,
);

/**
 * saveRemoteWork. Args: repoPath message tempRef knownCommit... Stdin: the ignored paths to keep
 * (NUL-separated, from the clone's top, taken literally). The index as it was is written as a
 * tree first (when git can: not in a merge); then everything is staged, those ignored paths too
 * (the clone is about to be removed), the stash commit made and, with that tree, made again with
 * the index as it was as its second parent (git/saved-work.ts saveWorkOnRef, the same shape); its
 * bundle streams without the history of the known commits (the host has them; the transport caps
 * a reply's size). Prints `clean`, or `saved <commit>` and a newline followed by the bundle bytes.
 * The temporary ref is deleted before the end.
 */
export const SAVE_WORK = script(
  'save work',
  `
repo=$1 message=$2 ref=$3
shift 3
real_dir "$repo" || exit 10
cd -- "$repo" || exit 10
${IDENTITY}
keep=$(mktemp) || exit 11
if ! cat >"$keep"; then rm -f -- "$keep"; exit 11; fi
index=$(g write-tree 2>/dev/null) || index=
staged=0
if g add --all >/dev/null 2>&1; then
  if [ ! -s "$keep" ] || GIT_LITERAL_PATHSPECS=1 g add --force --pathspec-from-file="$keep" --pathspec-file-nul >/dev/null 2>&1; then staged=1; fi
fi
rm -f -- "$keep"
[ "$staged" = 1 ] || exit 11
commit=$(g stash create "$message" 2>/dev/null) || exit 11
if [ -z "$commit" ]; then echo clean; exit 0; fi
if [ -n "$index" ]; then
  head=$(g rev-parse --verify --quiet "$commit^1") && tree=$(g rev-parse --verify --quiet "$commit^{tree}") || exit 11
  parent=$(g commit-tree "$index" -p "$head" -m "index on $message") || exit 11
  commit=$(g commit-tree "$tree" -p "$head" -p "$parent" -m "$message") || exit 11
fi
g update-ref "$ref" "$commit" || exit 11
printf "saved %s\\n" "$commit"
if [ $# -gt 0 ]; then g bundle create --quiet - "$ref" --not "$@"; else g bundle create --quiet - "$ref"; fi
rc=$?
g update-ref -d "$ref"
[ "$rc" = 0 ] || exit 12
`,
);

/** bringBranchBack, second trip. Args: repoPath branch knownCommit... Streams a bundle of the branch without what the host has. */
export const BUNDLE_BRANCH = script(
  'bundle branch',
  `
real_dir "$1" || exit 10
repo=$1 branch=$2
shift 2
if [ $# -gt 0 ]; then g -C "$repo" bundle create --quiet - "refs/heads/$branch" --not "$@" || exit 11
else g -C "$repo" bundle create --quiet - "refs/heads/$branch" || exit 11
fi
`,
);

/**
 * removeRemoteClone. Args: taskFolder markerText repoPath expectedBranch expectedHead [savedCommit].
 * Every check runs in this script right before the removal; with savedCommit (its uncommitted work
 * saved on the host first), the clone may be dirty only with exactly the saved state. Prints removed | already_gone | a refusal reason.
 */
export const REMOVE_CLONE = script(
  'remove clone',
  `
folder=$1 text=$2 repo=$3 branch=$4 head=$5 saved=\${6:-}
present "$repo" || { echo already_gone; exit 0; }
real_dir "$repo" || { echo not_a_directory; exit 0; }
if ! marker_is "$folder/${MARKER_FILE_NAME}" "$text" || ! in_folder "$repo" "$folder"; then echo marker_mismatch; exit 0; fi
reason=$(clone_check "$repo" "$branch" "$head" "$saved")
[ -z "$reason" ] || { echo "$reason"; exit 0; }
rm -rf --one-file-system -- "$repo"
present "$repo" && exit 10
echo removed
`,
);

/** removeRemoteTaskFolderIfEmpty. Args: taskFolder markerText. Prints removed | kept | already_gone (remove_folder_if_empty). */
export const REMOVE_FOLDER = script(
  'remove folder',
  `
remove_folder_if_empty "$1" "$2"
`,
);

/** These and the workspace scripts of ssh/remote-scripts.ts (the agent's are in ssh/agent-scripts.ts), for the check that none holds a single quote. */
export const WORKSPACE_SCRIPTS = {
  MATERIALIZE_SLOT,
  DISCARD_SLOTS,
  READ_WORKSPACE,
  LOCAL_HEADS,
  IGNORED_PATHS,
  SAVE_WORK,
  BUNDLE_BRANCH,
  REMOVE_CLONE,
  REMOVE_FOLDER,
  MEASURE_WORKSPACE,
  RESTORE_WORK,
};
