/**
 * The agent's scripts on an SSH target: the runner that leads the agent's own session and process
 * group and records its outcome, its start, the checks of recorded processes (pid AND start
 * time), the stops, the search by execution mark, the exit status and the log. Every one is a
 * constant (ssh/remote-scripts.ts says what a target must have, ssh/remote-exec.ts how they run).
 */
import { script } from './remote-scripts';

/**
 * The agent runner, started by START_AGENT with `setsid --fork` so it leads its own session and
 * process group, and as a foreground command: bash starts an asynchronous (`&`) command with
 * SIGINT and SIGQUIT ignored, and an ignored signal is inherited through exec by the agent.
 * Args: logPath statusPath argv...; stdin: envCount NAME VALUE... each ended by NUL (an argument
 * would show the values to every user of the remote in its command line). It prints its pid to
 * the starter, moves its output to the log, reads the environment, takes /dev/null as stdin, and
 * stops itself, so the starter can verify it leads its group and read its start time before the
 * agent runs. It runs the agent as its child in a subshell that takes
 * the environment (the runner keeps its own, to write the status with its own PATH), survives the
 * group signals meant for the agent (a handler, not an ignore, so the agent does not inherit it),
 * and writes the outcome as the local shim does: write, fsync, rename.
 */
export const AGENT_RUNNER = `set -u
printf "%s\\n" "$$"
exec >>"$1" 2>&1
status_path=$2
limits=$3
shift 3
IFS= read -r -d "" n || exit 97
case "$n" in ""|*[!0-9]*) exit 97 ;; esac
pairs=()
for ((i = 0; i < 2 * n; i++)); do IFS= read -r -d "" x || exit 97; pairs+=("$x"); done
exec </dev/null
kill -STOP "$$"
trap ":" TERM INT HUP
(
  trap - TERM INT HUP
  if [ -n "$limits" ]; then
    held=
    ulimit -d "\${limits%%:*}" 2>/dev/null && held="memory (data and anonymous mappings) \${limits%%:*} KiB"
    ulimit -u "\${limits#*:}" 2>/dev/null && held="\${held:+$held, }processes of its user \${limits#*:}"
    printf "task-workspaces: limits on this target (ulimit): %s; no CPU limit\\n" "\${held:-none}"
  fi
  for ((i = 0; i < 2 * n; i += 2)); do export -- "\${pairs[i]}=\${pairs[i + 1]}"; done
  exec "$@"
)
st=$?
ended=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
signal=
if [ "$st" -gt 128 ]; then signal=$(kill -l "$((st - 128))" 2>/dev/null) || signal=; fi
umask 077
if [ -n "$signal" ]; then
  printf "{\\"exitCode\\":null,\\"signal\\":\\"SIG%s\\",\\"endedAt\\":\\"%s\\"}" "$signal" "$ended" >"$status_path.tmp"
else
  printf "{\\"exitCode\\":%s,\\"signal\\":null,\\"endedAt\\":\\"%s\\"}" "$st" "$ended" >"$status_path.tmp"
fi
sync -- "$status_path.tmp" 2>/dev/null
mv -f -- "$status_path.tmp" "$status_path"
`;

/** Reads /proc/<pid>/stat into state, pgrp and start (fields 3, 5, 22, counted after the last `)` since the name may hold any byte). */
const PROC_STAT = `
proc_stat() {
  local line rest f
  state= pgrp= start=
  read -r line 2>/dev/null <"/proc/$1/stat" || return 1
  rest=\${line##*) }
  read -r -a f <<<"$rest"
  state=\${f[0]-} pgrp=\${f[2]-} start=\${f[19]-}
}
`;

/** Whether a process group ("$1") has a member that is not a zombie (read from /proc: kill -0 would count zombies an init that does not reap keeps around). */
const GROUP_ALIVE = `
group_alive() {
  local s
  for s in /proc/[0-9]*; do
    proc_stat "\${s#/proc/}" || continue
    [ "$pgrp" = "$1" ] && [ "$state" != Z ] && return 0
  done
  return 1
}
`;

/**
 * startRemoteAgent. Args: runnerSource cwd logPath statusPath promptPath(empty: none) envCount
 * (NAME VALUE)... argv... Stdin: the prompt, when promptPath is given. The command is checked as
 * exec would find it (type -P on the agent's PATH, or an executable file for a path with a slash,
 * relative to cwd) before anything is written. Prints `started <pid> <startTime>`.
 */
export const START_AGENT = script(
  'start agent',
  PROC_STAT +
    `
runner=$1 cwd=$2 log=$3 status=$4 prompt=$5 limits=$6 n=$7
shift 7
drain() { if [ -n "$prompt" ]; then cat >/dev/null; fi; }
# A count reaches arithmetic, which would evaluate anything else.
case "$n" in ""|*[!0-9]*) drain; exit 12 ;; esac
case "$limits" in ""|[0-9]*:[0-9]*) ;; *) drain; exit 12 ;; esac
case "$limits" in *[!0-9:]*|*:*:*) drain; exit 12 ;; esac
real_dir "$cwd" || { drain; exit 10; }
cd -- "$cwd" || { drain; exit 10; }
(
  k=$n
  while [ "$k" -gt 0 ]; do export -- "$1=$2" 2>/dev/null || exit 12; shift 2; k=$((k - 1)); done
  case "$1" in
    */*) [ -f "$1" ] && [ -x "$1" ] || exit 11 ;;
    *) type -P -- "$1" >/dev/null || exit 11 ;;
  esac
)
rc=$?
[ "$rc" = 0 ] || { drain; exit "$rc"; }
mkdir -p -- "$(dirname -- "$log")" "$(dirname -- "$status")" || { drain; exit 13; }
: >>"$log" || { drain; exit 13; }
if [ -n "$prompt" ]; then
  mkdir -p -- "$(dirname -- "$prompt")" && rm -f -- "$prompt" && (umask 077 && cat >"$prompt") && chmod 600 -- "$prompt" || exit 13
fi
rm -f -- "$status" "$status.tmp"
# The environment goes to the runner through a pipe; descriptors past stderr are closed so the
# runner holds nothing of this SSH session open.
pid=$(setsid --fork bash -c "$runner" tws-agent-runner "$log" "$status" "$limits" "\${@:2*n+1}" < <(printf "%s\\0" "$n" "\${@:1:2*n}") 2>>"$log" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-)
case "$pid" in ""|*[!0-9]*) exit 14 ;; esac
for _ in $(seq 1 500); do
  proc_stat "$pid" || break
  [ "$state" = T ] && break
  sleep 0.01
done
if [ "$state" != T ] || [ "$pgrp" != "$pid" ]; then kill -KILL "$pid" 2>/dev/null; exit 14; fi
kill -CONT "$pid" || exit 14
printf "started %s %s\\n" "$pid" "$start"
`,
);

export const START_REFUSALS: Record<number, string> = {
  10: 'cwd_missing',
  12: 'env_rejected',
  13: 'paths_unwritable',
  14: 'start_failed',
};
export const START_NOT_STARTABLE = 11;

/**
 * remoteProcesses. Args: (pid startTime)... Prints per process, NUL-terminated: `alive` then
 * `cwd` + the path or `nocwd`; or `gone`. A zombie is gone.
 */
export const PROCESSES = script(
  'read processes',
  PROC_STAT +
    `
while [ $# -ge 2 ]; do
  pid=$1 want=$2
  shift 2
  if proc_stat "$pid" && [ "$state" != Z ] && [ "$start" = "$want" ]; then
    printf "alive\\0"
    if IFS= read -r -d "" cwd < <(readlink -z -- "/proc/$pid/cwd" 2>/dev/null); then printf "cwd\\0%s\\0" "$cwd"; else printf "nocwd\\0"; fi
  else
    printf "gone\\0"
  fi
done
`,
);

/**
 * stopRemoteAgent. Args: pid startTime graceMs. The group is alive while any member is not a
 * zombie (read from /proc: kill -0 would count zombies an init that does not reap keeps around).
 * Prints gone | stopped | would_not_stop.
 */
export const STOP_AGENT = script(
  'stop agent',
  PROC_STAT +
    GROUP_ALIVE +
    `
pid=$1 want=$2 grace=$3
case "$grace" in ""|*[!0-9]*) exit 10 ;; esac
if ! proc_stat "$pid" || [ "$state" = Z ] || [ "$start" != "$want" ]; then echo gone; exit 0; fi
kill -TERM -- "-$pid" 2>/dev/null
for _ in $(seq 1 $((grace / 50))); do
  group_alive "$pid" || { echo stopped; exit 0; }
  sleep 0.05
done
group_alive "$pid" || { echo stopped; exit 0; }
kill -KILL -- "-$pid" 2>/dev/null
for _ in $(seq 1 40); do
  group_alive "$pid" || { echo stopped; exit 0; }
  sleep 0.05
done
echo would_not_stop
`,
);

/**
 * findRemoteMarked. Args: mark (NAME=value, exactly one environment entry). The processes whose
 * environment holds it (the agent and what it started) belong to one start of one execution.
 * Prints "leader <pid> <start>" when the group's leader (the runner) still runs, "members <pgid>"
 * when only others of its group do, "none" when nothing carries the mark.
 */
export const FIND_MARKED = script(
  'find marked processes',
  PROC_STAT +
    `
mark=$1 pgid=
for d in /proc/[0-9]*; do
  grep -qzxF -- "$mark" "$d/environ" 2>/dev/null || continue
  proc_stat "\${d#/proc/}" && [ "$state" != Z ] || continue
  pgid=$pgrp
  break
done
[ -n "$pgid" ] || { echo none; exit 0; }
# The runner leads the group (it gets the variables through a pipe: its own environment has no mark).
if proc_stat "$pgid" && [ "$state" != Z ] && [ "$pgrp" = "$pgid" ]; then echo "leader $pgid $start"; else echo "members $pgid"; fi
`,
);

/** stopRemoteGroup. Args: pgid graceMs. TERM to the group, KILL after the grace; prints stopped | would_not_stop. */
export const STOP_GROUP = script(
  'stop process group',
  PROC_STAT +
    GROUP_ALIVE +
    `
pgid=$1 grace=$2
case "$pgid$grace" in *[!0-9]*) exit 10 ;; esac
kill -TERM -- "-$pgid" 2>/dev/null
for _ in $(seq 1 $((grace / 50))); do group_alive "$pgid" || { echo stopped; exit 0; }; sleep 0.05; done
kill -KILL -- "-$pgid" 2>/dev/null
for _ in $(seq 1 40); do group_alive "$pgid" || { echo stopped; exit 0; }; sleep 0.05; done
echo would_not_stop
`,
);

/** readRemoteExitStatus. Args: statusPath. Prints the file; exit 10 when absent. */
export const READ_EXIT_STATUS = script(
  'read exit status',
  `
present "$1" || exit 10
cat -- "$1"
`,
);

/** readRemoteLog. Args: logPath offset maxBytes. Prints up to maxBytes from offset; nothing when absent. */
export const READ_LOG = script(
  'read log',
  `
case "$2$3" in ""|*[!0-9]*) exit 10 ;; esac
present "$1" || exit 0
tail -c "+$(($2 + 1))" -- "$1" | head -c "$3"
`,
);

/** removeRemoteTaskRuns. Args: runsDir taskId. Removes a deleted task's run folder (its agents' logs and statuses); prints removed. */
export const REMOVE_RUNS = script(
  'remove runs',
  `
case "$2" in ""|*[!0-9a-f-]*) exit 10 ;; esac
rm -rf -- "$1/$2" || exit 11
echo removed
`,
);

/** The agent's scripts, for the check that none holds a single quote. */
export const AGENT_SCRIPTS = {
  AGENT_RUNNER,
  START_AGENT,
  PROCESSES,
  STOP_AGENT,
  FIND_MARKED,
  STOP_GROUP,
  READ_EXIT_STATUS,
  READ_LOG,
  REMOVE_RUNS,
};

/**
 * processAge. Args: pid startTime. How long the process has run, in ms, from the target's own clock
 * since boot (/proc/uptime) and its start in clock ticks; `gone` when that pid is another process
 * (its start differs) or none.
 */
export const PROCESS_AGE = script(
  'process age',
  PROC_STAT +
    `
pid=$1 want=$2
case "$pid$want" in ""|*[!0-9]*) exit 10 ;; esac
proc_stat "$pid" && [ "$start" = "$want" ] || { echo gone; exit 0; }
read -r up _ </proc/uptime || exit 11
hz=$(getconf CLK_TCK 2>/dev/null)
case "$hz" in ""|*[!0-9]*|0) hz=100 ;; esac
secs=\${up%.*} frac=\${up#*.}00
echo $(( secs * 1000 + 10#\${frac:0:2} * 10 - start * 1000 / hz ))
`,
);
