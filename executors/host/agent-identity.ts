/**
 * What a sandboxed agent owns: the preparation of its workspace, home and git folders
 * for its uid (executors/host/agent-uid.ts) before it starts. Called by the host's agent start
 * (executors/host/agent-spawn.ts spawnDetached) and the benchmark's floor.
 */
import { chmodSync, chownSync, lstatSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Db } from '../../db/pool';
import { isWithinFolder, OWNERSHIP_MARKER_FILE } from '../../domain/task-layout';
import {
  bubblewrapArgs,
  nulSeparated,
  SANDBOX_ARGS_FD,
  sandboxEnvironmentArgs,
  type AgentNetworkPolicy,
  type GitBind,
} from '../../domain/sandbox';
import type { StartAgentInput } from '../agent-start';
import { gitSlotsOf, type LaunchPlan } from '../../domain/launch';
import type { ActivityDeps } from '../support/deps';
import { typedFailure } from '../support/failures';
import {
  absentIsFine,
  agentFolder,
  closeServiceFolders,
  giveTreesExcept,
  serviceFiles,
  traversable,
  unreachable,
} from './agent-owner';
import { dropTo, type SandboxPrograms } from './agent-sandbox';
import { gitStoreLayout } from './git-store-layout';
import { refreshIndexAs } from '../../git/index-refresh';
import { objectStoresListPath } from './exits';
import { refFoldersListPath } from './ref-moves';
import { pathExistsSync } from './workspace-fs';

/**
 * The agent's git trusts the repositories it is shown: their pointer files are the service's (root's),
 * not its uid's, which git would otherwise refuse as "dubious ownership". Its own home, its own config.
 */
const AGENT_GIT_CONFIG = '[safe]\n\tdirectory = *\n';

/** What the preparation of a sandboxed start knows before it reads the git folders. */
interface Ownership {
  config: ActivityDeps['config'];
  uid: number;
  home: string;
  /** The environment's folder, the agent's uid's; null for the source checkout (its owner's, left as it is). */
  workspace: string | null;
  logPath: string;
  /** The repositories' common git dirs, bound into the sandbox. */
  repositories: string[];
  /** The worktrees of the workspace. */
  worktrees: string[];
}

/**
 * A folder above the workspace or a repository that others cannot search (a home folder, 0700):
 * the sandbox could not bind it as the agent's uid. Refused before the agent starts, and said why.
 */
function reachable(p: Ownership): void {
  if (unreachable([p.workspace ?? p.logPath, ...p.repositories]))
    throw typedFailure('internal', { reason: 'agent_cannot_reach_workspace' });
}

/** The run folder traversable, the home the agent's (0700), with its git config. */
function prepareHome(p: Ownership): void {
  const { config, uid } = p;
  traversable(config.logDir, path.dirname(p.logPath));
  // A home elsewhere in the run folders (a container's, shared by its agents): its way there too.
  if (path.dirname(p.home) !== path.dirname(p.logPath)) {
    mkdirSync(path.dirname(p.home), { recursive: true, mode: 0o711 });
    traversable(config.logDir, path.dirname(p.home));
  }
  agentFolder(p.home, uid);
  // The home is kept across the task's sessions (executors/host/agent-home.ts): its git config is
  // written again at every start, the service's (root's, 0644), whatever an agent left there. The
  // name is unlinked, never followed (a link the agent made points nowhere of the service's), and
  // made anew exclusively: one made meanwhile by another agent of the home fails the start.
  const gitConfig = path.join(p.home, '.gitconfig');
  rmSync(gitConfig, { force: true, recursive: true });
  writeFileSync(gitConfig, AGENT_GIT_CONFIG, { mode: 0o644, flag: 'wx' });
}

/**
 * The workspace and the git folders it writes the agent's uid's, every pointer git follows the
 * service's. A worktree given whole has every index entry's owner and ctime changed: its index is
 * refreshed once, as the uid, before the agent starts (a git process re-reading every file, 9.5 ms
 * for 600, 1.2 s for 62,000; a first launch pays it in giveNewWorkspace, beside the publication of
 * its inventory), since the service's git never writes it (GIT_OPTIONAL_LOCKS=0) and would
 * otherwise compare every file by content on every status and removal, for the worktree's life.
 */
async function handOver(p: Ownership & { owned: string[]; pointers: string[] }): Promise<void> {
  const { config, uid } = p;
  // Given whole once, when its top is not the uid's yet (a new worktree, a new store or ref folder):
  // an attach changes nothing that is already the agent's (R1.2), and costs one lstat per folder.
  // Each worktree on its own too: one made afresh in a task folder that stayed (a re-materialization
  // of a workspace of several repositories, an executor transition) is the service's until given.
  const worktrees = p.workspace ? p.worktrees.filter((w) => w !== p.workspace && isWithinFolder(w, p.workspace!)) : [];
  // Its object stores hold commits not yet home: its own alone, as its workspace is. Modes beside
  // the owners (a chown changes no folder's mode). The pointers are never given; made the
  // service's after, whoever owned them before.
  const stores = p.owned.filter((o) => isWithinFolder(o, path.join(config.agentRoot, 'agent-objects')));
  for (const folder of [...(p.workspace ? [p.workspace] : []), ...stores]) chmodSync(folder, 0o700);
  for (const store of stores) traversable(config.agentRoot, path.dirname(store));
  const given = await giveUnowned([...(p.workspace ? [p.workspace, ...worktrees] : []), ...p.owned], uid, p.pointers);
  serviceFiles(p.pointers);
  await refreshGiven(config, p.workspace ? p.worktrees : [], given, uid);
}

/**
 * The index of each worktree just given refreshed as its new owner (git/index-refresh.ts), before
 * any agent runs in it: otherwise every later status and removal re-reads all of its files. Only a
 * matter of speed: one that fails is left as it was (read right, slowly) and the start goes on.
 */
async function refreshGiven(
  config: ActivityDeps['config'],
  worktrees: string[],
  given: string[],
  uid: number,
  logger?: ActivityDeps['logger'],
): Promise<void> {
  const refreshed = worktrees.filter((w) => given.some((tree) => isWithinFolder(w, tree)));
  await Promise.all(
    refreshed.map((w) =>
      refreshIndexAs(w, uid, config.gitBinary).catch((err: unknown) =>
        logger?.warn({ err }, 'the index of a worktree given to its agent uid could not be refreshed'),
      ),
    ),
  );
}

/**
 * A workspace a first launch just made, given to its agents' uid at once (the `chown -R` the
 * start's hand-over would run), with the git folders its agents write (their task store, ref
 * folders and worktree registrations, made here as the start would make them), so that it runs
 * while the launch publishes its inventory rather than on the start's path: the start then finds
 * them given (an lstat each) and gives nothing. Nothing runs in it meanwhile, and every pointer git
 * follows stays the service's throughout (a second run of the step, or a git status, reads the
 * worktree meanwhile) and is made so again at the start. Nothing to do without a sandbox, or for an SSH
 * clone or the source checkout. `plan` is the published one (its worktrees' registration ids);
 * `owner` is {@link newWorkspaceUid}'s answer.
 */
export async function giveNewWorkspace(
  deps: { pool: Db; config: ActivityDeps['config']; logger?: ActivityDeps['logger'] },
  plan: LaunchPlan,
  owner: number | null,
  /** Given already, then written by the service (work restored after a setup): given whole again. */
  again = false,
): Promise<void> {
  if (owner === null) return;
  // Its git folders read and made (a few syscalls), then all of it given in one `chown`: the
  // worktree (the most of it) and those folders; the pointers git follows in them (the worktrees'
  // `.git` files, the marker, the registrations' files) stay the service's throughout.
  const { owned, readOnlyFiles } = gitStoreLayout(gitSlotsOf(plan), plan.workspacePath, deps.config.agentRoot);
  const pointers = [
    path.join(plan.workspacePath, OWNERSHIP_MARKER_FILE),
    ...plan.slots.map((slot) => path.join(slot.worktreePath, '.git')),
    ...readOnlyFiles,
  ];
  const given = await giveUnowned([plan.workspacePath, ...owned], owner, pointers, again);
  await refreshGiven(
    deps.config,
    plan.slots.map((slot) => slot.worktreePath),
    given,
    owner,
    deps.logger,
  );
}

/**
 * Those of the folders whose top is not yet `uid`'s given to it whole (one inside another given is
 * given with it), read side by side: one gone is the start's to judge; any other failure to read
 * one stops the start.
 */
async function giveUnowned(folders: string[], uid: number, keep: string[], again = false): Promise<string[]> {
  const owners = folders.map((folder) => {
    try {
      return lstatSync(folder).uid;
    } catch (err) {
      return absentIsFine(err);
    }
  });
  const trees: string[] = [];
  folders.forEach((folder, i) => {
    if (trees.some((given) => isWithinFolder(folder, given))) return;
    if (owners[i] !== undefined && (again || owners[i] !== uid)) trees.push(folder);
  });
  if (trees.length > 0) await giveTreesExcept(trees, uid, keep);
  return trees;
}

/** What a sandboxed start prepared on the host, for its command ({@link sandboxedCommand}). */
export interface PreparedSandbox {
  home: string;
  gitBinds: GitBind[];
  /** The pointers git follows, bound read-only. */
  pointers: string[];
  /** The workspace's worktrees other than its folder itself, bound where they are. */
  worktrees: string[];
}

/**
 * Before a sandboxed start: the service's folders closed, the run folder traversable
 * and the home the agent's, the workspace the agent's uid's (given whole the first time, when its
 * top folder is not yet: after a materialization), the git folders it writes its, and every
 * pointer git follows the service's, read-only. What needs no reading of the git folders runs side
 * by side with that reading (each is a few syscalls, on the path of every start); the hand-over
 * follows it. Nothing of the request's environment is written here.
 */
export async function prepareSandbox(
  input: StartAgentInput,
  p: { config: ActivityDeps['config']; uid: number; logPath: string; home?: string },
): Promise<PreparedSandbox> {
  const { config, uid, logPath } = p;
  const slots =
    input.gitSlots ?? (input.gitDirs ?? []).map((commonDir) => ({ commonDir, worktreePath: null, refFolder: null }));
  const inCheckout = slots.some((slot) => isWithinFolder(slot.commonDir, input.cwd));
  const ownership: Ownership = {
    config,
    uid,
    home: p.home ?? path.join(path.dirname(logPath), 'home'),
    workspace: inCheckout ? null : input.cwd,
    logPath,
    repositories: slots.map((slot) => slot.commonDir),
    worktrees: slots.map((slot) => slot.worktreePath).filter((w): w is string => w !== null),
  };
  const marker = path.join(input.cwd, OWNERSHIP_MARKER_FILE);
  // Synchronous, one after the other: each a few syscalls of microseconds (agent-owner.ts says why).
  const layout = gitStoreLayout(slots, input.cwd, config.agentRoot);
  const markerPresent = pathExistsSync(marker);
  closeServiceFolders(config);
  reachable(ownership);
  prepareHome(ownership);
  const pointers = [...layout.readOnlyFiles, ...(markerPresent ? [marker] : [])];
  // Which task stores the service brings home when this agent ends (executors/host/exits.ts).
  writeFileSync(objectStoresListPath(logPath), JSON.stringify(layout.storeKeyDirs));
  // And the ref folders whose moves bring them home while it runs (executors/host/ref-moves.ts).
  writeFileSync(refFoldersListPath(logPath), JSON.stringify(layout.refFolders));
  await handOver({ ...ownership, owned: layout.owned, pointers });
  return {
    home: ownership.home,
    gitBinds: layout.binds,
    pointers,
    worktrees: ownership.worktrees.filter((w) => w !== input.cwd),
  };
}

/**
 * The command that starts the agent in its sandbox as `uid`, once its start is prepared
 * ({@link prepareSandbox}): its home (its task's), everything of the service hidden, the
 * pointers git follows read-only, and its variables in `argsFile` for bubblewrap's `--args`.
 */
export async function sandboxedCommand(
  input: StartAgentInput,
  env: Record<string, string>,
  prepared: PreparedSandbox,
  p: {
    config: ActivityDeps['config'];
    uid: number;
    sandbox: SandboxPrograms;
    network: { policy: AgentNetworkPolicy } | null;
    promptPath: string;
    argsFile: string;
    /** Credential copies shown read-only in the home. */
    homeFiles?: { source: string; target: string }[];
  },
): Promise<string[]> {
  const { config, uid, sandbox, network, promptPath, argsFile } = p;
  env.HOME = prepared.home;
  if (input.prompt != null) chownSync(promptPath, uid, uid);
  const layout = {
    workspace: input.cwd,
    gitBinds: prepared.gitBinds,
    network: network?.policy,
    hidden: [config.dataDir, config.agentRoot, config.workspaceRoot, config.logDir],
    home: prepared.home,
    pinnedFolders: prepared.worktrees,
    pointers: prepared.pointers,
    readOnlyFiles: input.prompt != null ? [promptPath] : [],
    homeFiles: p.homeFiles ?? [],
    // With limits on, /tmp is bounded and counted in the agent's memory group.
    ...(config.limits.enabled ? { tmpBytes: config.limits.tmpBytes } : {}),
  };
  // The agent's environment is read by bubblewrap from a file the supervisor opens and unlinks:
  // set inside the sandbox only, in no process's environment or argv outside it.
  writeFileSync(argsFile, nulSeparated(sandboxEnvironmentArgs(env)), { mode: 0o600 });
  return [
    ...dropTo(sandbox, uid),
    '--args',
    String(SANDBOX_ARGS_FD),
    ...bubblewrapArgs(layout),
    '--',
    ...input.command,
  ];
}
