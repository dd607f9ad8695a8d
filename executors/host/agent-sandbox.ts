/**
 * Whether this host can run agents in bubblewrap (TWS_AGENT_SANDBOX: `auto` uses it when it
 * works here, `bwrap` requires it, `none` never uses it), found once per process by running it.
 */
import { execFile } from 'node:child_process';
import { lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { existsSync } from 'node:fs';
import {
  bubblewrapArgs,
  gitStoreBinds,
  type AgentIsolation,
  type AgentNetworkPolicy,
  type AgentSandboxMode,
  type GitBind,
} from '../../domain/sandbox';
import { isWithinFolder } from '../../domain/task-layout';
import { isRealDirectory } from './workspace-fs';
import { isExactFolder, objectStoreKeyDir, prepareObjectStore } from '../../git/agent-objects';

/** Programs the service runs outside any sandbox: by absolute path, found once, never on a PATH a request could name (issue 45). */
export function systemBinary(name: string): string | null {
  for (const dir of ['/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
    const candidate = path.join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

/** The fixed environment of every process the service runs around an agent (the supervisor, setpriv, bubblewrap, slirp4netns). */
export const SERVICE_PROGRAM_ENV: Readonly<Record<string, string>> = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' };

/** The supervisor's variable naming the file of the sandbox's arguments (native/agent-supervisor.c). */
export const SANDBOX_ARGS_VARIABLE = 'TWS_SANDBOX_ARGS';

/** How an agent's sandbox is started here: setpriv to its uid, then bubblewrap, both by absolute path. */
export interface SandboxPrograms {
  setpriv: string;
  bwrap: string;
}

/** The programs before the sandbox's arguments: the agent's uid and gid, no groups, no new privileges. */
export const dropTo = (programs: SandboxPrograms, uid: number): string[] => [
  programs.setpriv,
  `--reuid=${uid}`,
  `--regid=${uid}`,
  '--clear-groups',
  '--no-new-privs',
  programs.bwrap,
];

let probed: Promise<SandboxPrograms | null> | null = null;

/**
 * The sandbox's programs when an unprivileged bubblewrap runs here as the agents will run it (its
 * own user namespace, no capability, no further user namespace), else null. Probed once per process
 * as the first uid of the range would run it.
 */
function probeBubblewrap(probeUid: number): Promise<SandboxPrograms | null> {
  probed ??= (async () => {
    const setpriv = systemBinary('setpriv');
    const bwrap = systemBinary('bwrap');
    if (!setpriv || !bwrap) return null;
    const programs = { setpriv, bwrap };
    const probe = [
      ...dropTo(programs, probeUid).slice(1),
      ...bubblewrapArgs({ workspace: '/', gitBinds: [], hidden: [], home: '/', readOnlyFiles: [], network: 'none' }),
      '--',
      '/bin/true',
    ];
    return new Promise<SandboxPrograms | null>((resolve) =>
      execFile(setpriv, probe, { timeout: 10_000, env: SERVICE_PROGRAM_ENV }, (err) => resolve(err ? null : programs)),
    );
  })();
  return probed;
}

/** The line start-up refuses with where agents cannot be sandboxed here. */
const NO_SANDBOX =
  'agents cannot be sandboxed on this host: an unprivileged bubblewrap (Debian package bubblewrap, with setpriv from util-linux) must run in its own user namespace; install it, allow unprivileged user namespaces, or set TWS_AGENT_SANDBOX=none to run agents unsandboxed as the service';

/**
 * The programs agents run in, or null for none. `none` is the operator's explicit choice; `auto`
 * and `bwrap` refuse to go on without a working sandbox (issue 45: never an agent as root by default).
 */
export async function agentSandbox(mode: AgentSandboxMode, probeUid = 200000): Promise<SandboxPrograms | null> {
  if (mode === 'none') return null;
  const programs = await probeBubblewrap(probeUid);
  if (!programs) throw new Error(NO_SANDBOX);
  return programs;
}

export async function agentIsolation(mode: AgentSandboxMode): Promise<AgentIsolation> {
  return (await agentSandbox(mode)) ? 'bwrap' : 'none';
}

/** slirp4netns (Debian's package), the user-mode network of `egress`, found once per process by running it. */
let slirpProbed: Promise<string | null> | null = null;
function probeSlirp(): Promise<string | null> {
  slirpProbed ??= new Promise((resolve) =>
    (() => {
      const binary = systemBinary('slirp4netns');
      if (!binary) return resolve(null);
      execFile(binary, ['--version'], { timeout: 10_000, env: SERVICE_PROGRAM_ENV }, (err) =>
        resolve(err ? null : binary),
      );
    })(),
  );
  return slirpProbed;
}

/**
 * The network agents really get here (issue 33), and for `egress` the user-mode network's binary.
 * No sandbox means the host's network. `egress` without slirp4netns: with TWS_AGENT_SANDBOX=bwrap
 * the service refuses to start; with `auto` agents share the host's network, and /readyz and the
 * start-up warning say `agentNetwork: "host"`.
 */
export async function agentNetwork(
  mode: AgentSandboxMode,
  policy: AgentNetworkPolicy,
): Promise<{ policy: AgentNetworkPolicy; egressBinary: string | null }> {
  if (!(await agentSandbox(mode))) return { policy: 'host', egressBinary: null };
  if (policy !== 'egress') return { policy, egressBinary: null };
  const binary = await probeSlirp();
  if (binary) return { policy, egressBinary: binary };
  if (mode === 'bwrap')
    throw new Error(
      "TWS_AGENT_SANDBOX=bwrap with TWS_AGENT_NETWORK=egress, but slirp4netns does not run on this host (install the Debian package slirp4netns), so agents would reach the service's ports: set TWS_AGENT_NETWORK=none or host to choose otherwise",
    );
  return { policy: 'host', egressBinary: null };
}

/** A repository slot of the agent's workspace, as the launch plan records it. */
export interface AgentGitSlot {
  commonDir: string;
  /** The slot's worktree (its task store is keyed by it); null for older inputs: no store. */
  worktreePath: string | null;
  /** The ref folder its agent moves (domain/task-layout.ts taskRefFolder), or null. */
  refFolder: string | null;
  /** Its registration's id as the inventory records it (an attach); absent or null: not known yet. */
  worktreeId?: string | null;
}

/** A folder made when missing, and usable only when it is exactly there (no link on the way). */
async function exactFolder(p: string): Promise<boolean> {
  await mkdir(p, { recursive: true });
  return isExactFolder(p);
}

/**
 * The binds of the repositories' common git dirs an agent works in (domain/sandbox.ts
 * gitStoreBinds), the key folders of the task stores made for them (git/agent-objects.ts), what the
 * agent's uid must own there (its object stores, its ref folders, its worktrees' admin folders) and
 * the pointers git follows that are shown read-only (issue 45). Its own worktrees' admin folders
 * are those registered for a slot's worktree exactly (`gitdir` names `<worktree>/.git`, a
 * regular file only the service writes); one whose pointers are not plain files is not made
 * writable at all (its agent's git then fails, no other task's). In the source checkout itself
 * (`local`), `hooks/` and `info/` are made when missing, so that they can be bound read-only: an
 * empty folder, as `git init` makes them.
 */
export async function gitStoreLayout(
  slots: AgentGitSlot[],
  workspace: string,
  dataDir: string,
): Promise<{ binds: GitBind[]; storeKeyDirs: string[]; owned: string[]; readOnlyFiles: string[] }> {
  const binds: GitBind[] = [];
  const storeKeyDirs: string[] = [];
  const owned: string[] = [];
  const readOnlyFiles: string[] = [];
  const byCommonDir = new Map<string, AgentGitSlot[]>();
  for (const slot of slots) byCommonDir.set(slot.commonDir, [...(byCommonDir.get(slot.commonDir) ?? []), slot]);
  for (const [commonDir, ofRepository] of byCommonDir) {
    if (!(await isRealDirectory(commonDir))) continue; // gone meanwhile: left out, as before
    const insideWorkspace = isWithinFolder(commonDir, workspace);
    if (insideWorkspace)
      for (const name of ['hooks', 'info']) await mkdir(path.join(commonDir, name), { recursive: true });
    const entries = await readdir(commonDir);
    const ownAdminDirs: string[] = [];
    let objectStore: string | null = null;
    const ownRefFolders: string[] = [];
    if (!insideWorkspace) {
      const worktrees = new Set(ofRepository.map((slot) => slot.worktreePath).filter((p): p is string => p !== null));
      if (entries.includes('worktrees')) {
        // Each worktree's registration is looked for where its records (an attach's inventory) or
        // git's own naming (after the worktree's folder) put it: a read or two, whatever the number
        // of worktrees of the repository (reading every registration's gitdir took an attach 4 ms
        // with a hundred). All are read only for a worktree not found so (a first launch where
        // git added a number to a name already taken).
        const registrations = path.join(commonDir, 'worktrees');
        const found = new Map<string, string>(); // registration folder → its worktree
        for (const slot of ofRepository) {
          const worktree = slot.worktreePath;
          if (worktree === null) continue;
          for (const id of new Set([slot.worktreeId, path.basename(worktree)])) {
            if (!id || id.includes('/') || id === '..') continue;
            const adminDir = path.join(registrations, id);
            if ((await registeredWorktree(adminDir)) !== worktree) continue;
            found.set(adminDir, worktree);
            break;
          }
        }
        if (found.size < worktrees.size)
          for (const id of await readdir(registrations)) {
            const adminDir = path.join(registrations, id);
            const worktree = found.has(adminDir) ? null : await registeredWorktree(adminDir);
            if (worktree && worktrees.has(worktree)) found.set(adminDir, worktree);
          }
        for (const [adminDir, worktree] of found) {
          if (!(await isRealDirectory(adminDir))) continue;
          const pointers = await protectedPointers(adminDir, worktree);
          if (!pointers) continue;
          ownAdminDirs.push(adminDir);
          owned.push(adminDir);
          readOnlyFiles.push(...pointers);
        }
      }
      // One store per repository of the workspace (a task holds a repository once).
      const first = ofRepository.find((slot) => slot.worktreePath !== null);
      if (first?.worktreePath) {
        objectStore = await prepareObjectStore(dataDir, first.worktreePath, commonDir);
        if (objectStore) {
          storeKeyDirs.push(objectStoreKeyDir(dataDir, first.worktreePath));
          owned.push(objectStore);
        }
      }
      for (const folder of new Set(ofRepository.map((slot) => slot.refFolder).filter((f): f is string => f !== null))) {
        // A folder reached through a link is not bound: the branch is then read-only (fail closed).
        const refs = path.join(commonDir, folder);
        const logs = path.join(commonDir, 'logs', folder);
        if ((await exactFolder(refs)) && (await exactFolder(logs))) {
          ownRefFolders.push(folder);
          owned.push(refs, logs);
        }
      }
    }
    binds.push(...gitStoreBinds({ commonDir, insideWorkspace, entries, ownAdminDirs, objectStore, ownRefFolders }));
  }
  return { binds, storeKeyDirs, owned, readOnlyFiles };
}

/** The worktree a registration folder names (its `gitdir` without `/.git`), or null. */
async function registeredWorktree(adminDir: string): Promise<string | null> {
  const registered = (await readFile(path.join(adminDir, 'gitdir'), 'utf8').catch(() => '')).trim();
  return registered.endsWith('/.git') ? registered.slice(0, -'/.git'.length) : null;
}

/** The pointer files of a worktree registration, each a plain file (config.worktree made empty where absent): else null. */
async function protectedPointers(adminDir: string, worktree: string): Promise<string[] | null> {
  const files = [
    path.join(adminDir, 'gitdir'),
    path.join(adminDir, 'commondir'),
    path.join(adminDir, 'config.worktree'),
  ];
  // git reads config.worktree only with extensions.worktreeConfig; made (empty) so that it can be bound read-only.
  await writeFile(files[2]!, '', { flag: 'wx', mode: 0o644 }).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  });
  const dotGit = path.join(worktree, '.git');
  for (const file of [...files, dotGit]) {
    const st = await lstat(file).catch(() => null);
    if (!st?.isFile()) return null;
  }
  return [...files, dotGit];
}
