/**
 * What `tws` says about itself: one row per command, from which the general USAGE, each
 * command's own `--help` and the options each command accepts are all made, so they cannot drift.
 */

export interface CommandUsage {
  /** The command and its arguments; the options named here are the ones it accepts. */
  usage: string;
  what: string;
  /** The role its routes need (client/gateway/auth.ts): the token it sends. Default: the user's. */
  role?: 'operator';
}

export const COMMANDS: Record<string, CommandUsage> = {
  repo: {
    usage: 'repo add <name> <path> [--default-branch B] [--host H] | repo list',
    what: 'register a git repository of a host (a relative path: from this folder), or list them (never their paths)',
  },
  task: {
    usage:
      'task new <title> --repository ID... [--base B] [--board ID] | task list [--archived] | task show|archive|unarchive <taskId> | task delete <taskId> [--discard]',
    what: 'make a task on repositories (B: their base branch), list, show, archive or unarchive tasks; delete one (the operator token; uncommitted work: refused unless --discard)',
  },
  launch: {
    usage: 'launch <taskId> [-f] [--executor E] [--profile P] [--prompt TEXT] [-- command...]',
    what: "start an agent on the task (E: worktree, the default, local, ssh, container; a command alone runs as the shell profile's; -f: its log until it ends)",
  },
  resume: {
    usage: 'resume <sessionId|taskId> [-f] [--prompt TEXT]',
    what: "run a session's agent again in its workspace (a task's id: its newest session; -f: its log until it ends)",
  },
  status: { usage: 'status <taskId>', what: "git status of each repository of the task's workspace" },
  board: {
    usage: 'board [-f] [--board ID]',
    what: 'the tasks by state: running, idle, needs attention, merged, archived (-f: printed again on every change, until Ctrl-C)',
  },
  jobs: {
    usage: 'jobs [--state S] [--task ID] [--trigger T]',
    what: "cleanup jobs (all pages), each with its Temporal link (the UI's page of its workflow)",
  },
  job: { usage: 'job <operationId>', what: 'one cleanup job, with its report and its Temporal link' },
  retry: {
    usage: 'retry <operationId>',
    what: 'a job waiting for an operator: a fresh round of attempts',
    role: 'operator',
  },
  cancel: {
    usage: 'cancel <operationId>',
    what: "end a waiting job; the barrier lifts (a delete's leftovers are recorded abandoned)",
    role: 'operator',
  },
  abandon: {
    usage: 'abandon <taskId>',
    what: "release the task's environment without touching a file",
    role: 'operator',
  },
  tasks: {
    usage: 'tasks [--archived] [--board ID]',
    what: 'the active tasks (--archived: the archived ones), newest first, all pages',
  },
  sessions: { usage: 'sessions <taskId>', what: "the task's sessions" },
  stop: {
    usage: 'stop <sessionId> | stop <taskId> | stop --all',
    what: "stop one agent, a task's agents, or (--all) every agent running or starting on the instance; files, worktrees and branches stay",
  },
  logs: {
    usage: 'logs [-f] [--tail N] <sessionId>',
    what: "what the session's agent printed (-f: until it ends; --tail N: its last N lines)",
  },
  hosts: { usage: 'hosts', what: 'the executor hosts and whether they are live', role: 'operator' },
  'ssh-targets': {
    usage: 'ssh-targets',
    what: 'the SSH targets of the ssh executor (never their keys)',
    role: 'operator',
  },
  'ssh-target-set': {
    usage:
      'ssh-target-set <id> [--known-hosts FILE] [--host H] [--port P] [--user U] [--key PATH] [--workspace-root PATH]',
    what: 'change an SSH target (a new host key: its known_hosts lines in FILE), checked over SSH before it is written',
    role: 'operator',
  },
  'ssh-target-rm': {
    usage: 'ssh-target-rm <id>',
    what: 'remove an SSH target no environment uses (refused while one does)',
    role: 'operator',
  },
  sweep: {
    usage: 'sweep [--dry-run] [--host H]',
    what: "the orphan sweep of a host's workspace root (default: the gateway's host; dry run: nothing removed)",
    role: 'operator',
  },
  'idle-release': {
    usage: 'idle-release [--dry-run] [--host H] [--idle-for D]',
    what: "release a host's idle workspaces now, their work saved (D: 90s, 15m, 1h, 7d)",
    role: 'operator',
  },
  push: {
    usage: 'push <taskId> [--force]',
    what: "push the task's branches to their repositories' remotes, under the same names (--force: even where not a fast-forward)",
  },
  preview: {
    usage: 'preview <taskId> [--strategy S]',
    what: 'what merging the task would do in each repository: clean, conflicts (their files), up to date or blocked (S: squash, the default, merge, fast_forward, rebase)',
  },
  merge: {
    usage:
      'merge <taskId> [--strategy S] [--message M] [--archive] [--commit-uncommitted] [--stop-agents] [--repository ID]...',
    what: 'merge the task into its base branches, all or none, and wait for the outcome: each base before → after (exit 1: refused or needs an operator)',
  },
  merges: { usage: 'merges <taskId>', what: "the task's merges, newest first, with their state" },
  'undo-merge': {
    usage: 'undo-merge <operationId>',
    what: 'move the bases back where the merge found them (refused once something landed on them since: revert instead)',
  },
  rebase: {
    usage: 'rebase <taskId> [--stop-agents] [--repository ID]...',
    what: "replay the task's commits on its base branches (a conflict changes nothing)",
  },
  pin: { usage: 'pin <taskId>', what: 'keep a task from being released for idleness' },
  unpin: { usage: 'unpin <taskId>', what: 'let a pinned task be released for idleness again' },
  limits: {
    usage: 'limits <taskId>',
    what: "what the task's agents may use (each, and together), its disk quota, and what they use now",
  },
  diff: {
    usage: 'diff <taskId> [--patch]',
    what: "the task's changes per repository against its base, committed then uncommitted (--patch: the patch itself)",
  },
  disk: {
    usage: 'disk [--host H] [--limit N]',
    what: "each host's free disk and its largest task workspaces, as last measured (N: 1 to 200, default 20)",
    role: 'operator',
  },
};

/** Options every command takes. */
const COMMON_OPTIONS = '[--json] [--data-dir D] [--api URL]';

const INSTANCE = `instance: the .data/ of the checkout this tws belongs to (--data-dir / TWS_DATA_DIR move it); its API from .data/api.json
  (written by make start, kept when it stops), else the configured port; --api / TWS_API_URL override it, and an API that is not
  the data folder's own gets TWS_OPERATOR_TOKEN only, never the data folder's token`;
const EXITS =
  'exit codes: 0 done, 1 refused by the service (the reason on stderr), 2 usage, 3 service unreachable or failing, 4 not found';

const width = Math.max(...Object.values(COMMANDS).map((c) => c.usage.length)) + 2;

export const USAGE = [
  `usage: tws <command> ${COMMON_OPTIONS}   (tws <command> --help: that command alone)`,
  ...Object.values(COMMANDS).map((c) => `  ${c.usage.padEnd(width)}${c.what}`),
  INSTANCE,
  EXITS,
].join('\n');

/** One command's own usage, for `tws <command> --help` and its usage errors. */
export function commandUsage(name: string): string {
  const c = COMMANDS[name];
  if (!c) return USAGE;
  return [`usage: tws ${c.usage} ${COMMON_OPTIONS}`, `  ${c.what}`, EXITS].join('\n');
}

/** The options a command accepts: the ones its usage names, and the common ones. */
export function optionsOf(name: string): Set<string> {
  const usage = COMMANDS[name]?.usage ?? '';
  const named = usage.match(/--[a-z-]+/g) ?? [];
  return new Set([
    ...named,
    ...(/(^|\s)\[-f\]/.test(usage) ? ['--follow'] : []),
    '--json',
    '--data-dir',
    '--api',
    '--help',
  ]);
}
