/**
 * The agent sandbox: bubblewrap, as Linux coding-agent sandboxes use it. The
 * system is read-only, the agent's workspace (and the git folders its worktrees commit into) is
 * writable, the service's data, workspace and log folders are hidden behind empty ones, and /proc
 * is the sandbox's own (a private pid namespace): no other process's environment is in reach.
 */
export interface SandboxLayout {
  /** The agent's working directory: writable. */
  workspace: string;
  /** The repositories' git folders, bound in this order (gitStoreBinds): what a commit writes writable, what steers git read-only. */
  gitBinds: GitBind[];
  /** Hidden behind empty folders: the service's data, every other workspace, every log. */
  hidden: string[];
  /** The agent's own writable home (in its run folder). */
  home: string;
  /**
   * Folders inside the workspace bound onto themselves (each worktree): a mount point cannot be
   * renamed or replaced, so the folder the service's records name stays the one the agent works in.
   */
  pinnedFolders?: string[];
  /**
   * The pointers git follows (a worktree's `.git` file, its registration's `gitdir`, `commondir`
   * and `config.worktree`, the task folder's ownership marker), which no agent may rewrite: bound
   * read-only after the folders they are in. One that went away between the launch and the
   * sandbox's start (its repository removed meanwhile) is left out, as the git folders are.
   */
  pointers?: string[];
  /** Files shown read-only although under a hidden folder, bound last (the prompt). */
  readOnlyFiles: string[];
  /** Files shown read-only in the home (a credential's copy, `source`, at `target`), bound after it: never written back. */
  homeFiles?: { source: string; target: string }[];
  /** The network the agent has; absent: the host's, as before. */
  network?: AgentNetworkPolicy;
  /** The sandbox's /tmp at most, in bytes (counted in the agent's memory); absent: the kernel's default (half the RAM). */
  tmpBytes?: number;
}

/** The empty folders that hide the service's hold nothing: an agent's writes there fail at once. */
const HIDING_FOLDER_BYTES = 64 * 1024;

/**
 * The sandbox's network. `egress` and `none` give the agent a network namespace of its
 * own, whose loopback is its own: no port of the service on the host (API, Temporal, its UI,
 * PostgreSQL, metrics, other agents) is in reach. `egress` adds a user-mode network (slirp4netns,
 * host loopback not mapped) so the internet is; `none` has only its own loopback; `host` shares
 * the host's network namespace, loopback included.
 */
export type AgentNetworkPolicy = 'egress' | 'none' | 'host';

/** The descriptors bubblewrap is given for `egress`: it reports its child on one and waits on the other until the network is up. */
export const SANDBOX_INFO_FD = 3;
export const SANDBOX_BLOCK_FD = 4;
/** The descriptor bubblewrap reads the agent's environment from (`--args`, native/agent-supervisor.c). */
export const SANDBOX_ARGS_FD = 5;

/**
 * What isolates the agent, bubblewrap being started by an unprivileged user (the
 * workspace's own uid, `setpriv` before it): its own user namespace, in which it is that uid with
 * no capability at all (`--cap-drop ALL`; `no_new_privs` from setpriv and bubblewrap), so it can
 * mount, unmount, enter or trace nothing; no further user namespace of its own (`--disable-userns`,
 * the way back to capabilities); its own pid (with its own /proc), IPC, UTS and cgroup namespaces;
 * a new session (no terminal of the service to push input into).
 */
const ISOLATION_ARGS = [
  '--unshare-user',
  '--disable-userns',
  '--cap-drop',
  'ALL',
  '--unshare-pid',
  '--unshare-ipc',
  '--unshare-uts',
  '--unshare-cgroup-try',
  '--die-with-parent',
];

/**
 * The agent's environment as bubblewrap arguments: it is set inside the sandbox only, never on a
 * process outside it (bubblewrap reads these from a descriptor, `--args`: they are in no argv).
 */
export function sandboxEnvironmentArgs(env: Record<string, string>): string[] {
  const args = ['--clearenv'];
  for (const [name, value] of Object.entries(env)) args.push('--setenv', name, value);
  return args;
}

/** NUL-separated, as bubblewrap's `--args` reads them; a NUL in a value would split it, so none is allowed. */
export function nulSeparated(args: string[]): string {
  if (args.some((arg) => arg.includes('\0'))) throw new Error('an argument holds a NUL byte');
  return args.map((arg) => `${arg}\0`).join('');
}

export function bubblewrapArgs(layout: SandboxLayout): string[] {
  const args = [...ISOLATION_ARGS, '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  if (layout.tmpBytes !== undefined) args.push('--size', String(layout.tmpBytes));
  args.push('--tmpfs', '/tmp');
  if (layout.network === 'egress' || layout.network === 'none') args.push('--unshare-net');
  if (layout.network === 'egress')
    args.push('--info-fd', String(SANDBOX_INFO_FD), '--block-fd', String(SANDBOX_BLOCK_FD));
  // Shortest first: a folder inside another hidden one is mounted over it, not under.
  for (const dir of [...new Set(layout.hidden)].sort((a, b) => a.length - b.length))
    args.push(...(layout.tmpBytes !== undefined ? ['--size', String(HIDING_FOLDER_BYTES)] : []), '--tmpfs', dir);
  args.push('--bind', layout.workspace, layout.workspace, '--bind', layout.home, layout.home);
  for (const folder of layout.pinnedFolders ?? []) args.push('--bind', folder, folder);
  // A git folder that went away between the launch and the sandbox's start is left out, not fatal.
  // In order: a later mount covers an earlier one, and a mount point cannot be renamed or replaced from inside.
  for (const [mode, p, source] of layout.gitBinds)
    args.push(mode === 'rw' ? '--bind-try' : '--ro-bind-try', source ?? p, p);
  for (const file of layout.pointers ?? []) args.push('--ro-bind-try', file, file);
  for (const file of layout.readOnlyFiles) args.push('--ro-bind', file, file);
  for (const file of layout.homeFiles ?? []) args.push('--ro-bind', file.source, file.target);
  args.push('--chdir', layout.workspace);
  return args;
}

export type AgentSandboxMode = 'auto' | 'bwrap' | 'none';
/** What agents run in on this host: bubblewrap, or nothing (the service's user, allow-listed environment). */
export type AgentIsolation = 'bwrap' | 'none';

/**
 * A repository's common git dir as an agent's sandbox sees it. A worktree agent
 * adds objects to its task's own store (bound over `objects/`, the repository's objects read-only
 * inside it), moves only its own branch folder (`refs/heads/tws/<task>/`, and its reflogs) and
 * writes its own worktree's admin folder (HEAD, index); every other ref, every object already
 * there and everything that steers git (config, hooks, attributes, other worktrees' admin
 * folders, packed refs) is read-only: it can add to history and never remove or rewrite it.
 */
export interface GitStore {
  commonDir: string;
  /** The common dir lies inside the agent's workspace (a `local` task: the source checkout's `.git`). */
  insideWorkspace: boolean;
  /** Names present in the common dir. */
  entries: string[];
  /** `worktrees/<id>` folders of the worktrees inside the agent's workspace: its own. */
  ownAdminDirs: string[];
  /** The task's own object store (git/agent-objects.ts), or null: then no object can be added. */
  objectStore: string | null;
  /** Ref folders the agent moves (`refs/heads/tws/<task>`), relative to the common dir, made beforehand. */
  ownRefFolders: string[];
}

/** What steers git, in a common dir: never written by an agent. */
const GIT_STEERING_ENTRIES = [
  'config',
  'config.worktree',
  'commondir',
  'hooks',
  'info',
  'worktrees',
  'packed-refs',
  'shallow',
];

/** [mode, path in the sandbox, path on the host when another]. */
export type GitBind = readonly ['rw' | 'ro', string] | readonly ['rw' | 'ro', string, string];

/** The folder of the task store that the repository's own objects are shown in (git/agent-objects.ts BASE_MOUNT). */
export const OBJECTS_BASE_MOUNT = 'tws-base';

export function gitStoreBinds(store: GitStore): GitBind[] {
  const present = (names: string[], mode: 'rw' | 'ro'): GitBind[] =>
    names.filter((name) => store.entries.includes(name)).map((name) => [mode, `${store.commonDir}/${name}`]);
  if (store.insideWorkspace) {
    // Writable through the workspace: the folder is bound onto itself (a mount point cannot be
    // renamed away and replaced by one of the agent's), and what steers git is bound read-only over it.
    return [['rw', store.commonDir], ...present(GIT_STEERING_ENTRIES, 'ro')];
  }
  // Read-only as a whole (also where a hidden folder would cover it), then what the agent adds to.
  const objects = `${store.commonDir}/objects`;
  const binds: GitBind[] = [['ro', store.commonDir]];
  if (store.objectStore && store.entries.includes('objects'))
    binds.push(['rw', objects, store.objectStore], ['ro', `${objects}/${OBJECTS_BASE_MOUNT}`, objects]);
  for (const folder of store.ownRefFolders)
    binds.push(['rw', `${store.commonDir}/${folder}`], ['rw', `${store.commonDir}/logs/${folder}`]);
  return [...binds, ...store.ownAdminDirs.map((dir): GitBind => ['rw', dir])];
}
