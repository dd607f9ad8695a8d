/**
 * A repository's `copyFiles` into a clone just made on an SSH target: the host reads them from its
 * checkout (executors/host/copy-files.ts readCopies: never through a link, capped), and one round
 * trip writes them into the clone, each only where nothing is yet (a file the clone has, committed
 * or not, is never overwritten), never through a link on its way (a clone holds whatever links its
 * repository commits), with its mode.
 */
import type { CopySkipReason } from '../domain/workspace-setup';
import type { SshTarget } from './connection';
import { absolutePath, RemoteOperationError, runScript, script } from './remote-scripts';

/**
 * copyIntoRemoteClone. Args: clonePath count. Stdin: per file `path NUL mode NUL size NUL` then its
 * bytes. Prints per file, in order, `copied` or why not (`symlink`, `not_a_file`, `exists`,
 * `unwritable`), each ended by NUL. A file that is not written is still read through, so the next
 * one starts where it should. Exit 10: the clone is not a real folder (nothing written); 12: bad
 * arguments; 13: the stream ended early or is not what the host sends.
 */
const COPY_FILES = script(
  'copy files',
  `
drain() { cat >/dev/null; }
real_dir "$1" || { drain; exit 10; }
root=$(realpath -e -- "$1") || { drain; exit 10; }
n=$2
case "$n" in ""|*[!0-9]*) drain; exit 12 ;; esac
umask 077
for ((i = 0; i < n; i++)); do
  IFS= read -r -d "" rel || exit 13
  IFS= read -r -d "" mode || exit 13
  IFS= read -r -d "" size || exit 13
  case "$size" in ""|*[!0-9]*) exit 13 ;; esac
  case "$mode" in ""|*[!0-7]*) exit 13 ;; esac
  why=
  case "/$rel/" in //*|*//*|*/../*|*/./*|*/.git/*) why=not_a_file ;; esac
  dest="$root/$rel"
  # The folders on its way: real folders of the clone, made where missing.
  rest=$rel
  d=$root
  while [ -z "$why" ] && [[ "$rest" == */* ]]; do
    d="$d/\${rest%%/*}"
    rest=\${rest#*/}
    if [ -L "$d" ]; then why=symlink
    elif [ -d "$d" ]; then :
    elif present "$d"; then why=not_a_file
    else mkdir -m 755 -- "$d" 2>/dev/null || why=unwritable
    fi
  done
  if [ -z "$why" ] && present "$dest"; then
    if [ -L "$dest" ]; then why=symlink; else why=exists; fi
  fi
  # Exactly its bytes are read from the stream, written or not.
  if [ -z "$why" ]; then
    head -c "$size" | { (set -o noclobber; cat >"$dest") 2>/dev/null || { drain; false; }; } || why=unwritable
  else
    head -c "$size" >/dev/null
  fi
  if [ -z "$why" ]; then
    [ "$(stat -c %s -- "$dest" 2>/dev/null)" = "$size" ] || exit 13
    chmod "$mode" -- "$dest" 2>/dev/null || why=unwritable
  fi
  printf "%s\\0" "\${why:-copied}"
done
`,
);

const ANSWERS = new Set(['copied', 'symlink', 'not_a_file', 'exists', 'unwritable']);

/** Writes the files into the clone at `clonePath` on the target; per file, null (copied) or why not. */
export async function copyIntoRemoteClone(
  target: SshTarget,
  clonePath: string,
  files: { path: string; data: Buffer; mode: number }[],
): Promise<(CopySkipReason | null)[]> {
  if (files.length === 0) return [];
  if (files.some((f) => f.path.includes('\0') || !Number.isInteger(f.mode) || f.mode < 0 || f.mode > 0o777))
    throw new RemoteOperationError('invalid_argument');
  const stdin = Buffer.concat(
    files.flatMap((f) => [Buffer.from(`${f.path}\0${f.mode.toString(8)}\0${f.data.length}\0`, 'utf8'), f.data]),
  );
  const result = await runScript(target, COPY_FILES, [absolutePath(clonePath), String(files.length)], { stdin });
  const answers = result.stdout.toString('utf8').split('\0');
  if (
    result.code !== 0 ||
    answers.pop() !== '' ||
    answers.length !== files.length ||
    answers.some((a) => !ANSWERS.has(a))
  )
    throw new RemoteOperationError('copy_failed');
  return answers.map((a) => (a === 'copied' ? null : (a as CopySkipReason)));
}
