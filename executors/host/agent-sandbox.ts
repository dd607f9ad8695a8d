/**
 * Whether this host can run agents in bubblewrap (TWS_AGENT_SANDBOX: `auto` uses it when it
 * works here, `bwrap` requires it, `none` never uses it), found once per process by running it.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  gitStoreBinds,
  type AgentIsolation,
  type AgentNetworkPolicy,
  type AgentSandboxMode,
  type GitBind,
} from '../../domain/sandbox';
import { isWithinFolder } from '../../domain/task-layout';
import { isRealDirectory } from './workspace-fs';
import { commandStartable } from './agent-shim';
import { isExactFolder, objectStoreKeyDir, prepareObjectStore } from '../../git/agent-objects';

const PROBE = ['--die-with-parent', '--unshare-pid', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', 'true'];
let probed: Promise<string | null> | null = null;

/** The bubblewrap binary when it runs a sandbox here, else null. */
function probeBubblewrap(): Promise<string | null> {
  probed ??= (async () => {
    if (!(await commandStartable('bwrap', '/', process.env.PATH))) return null;
    return new Promise<string | null>((resolve) =>
      execFile('bwrap', PROBE, { timeout: 10_000 }, (err) => resolve(err ? null : 'bwrap')),
    );
  })();
  return probed;
}

/** The sandbox binary agents run in, or null for none; `bwrap` mode refuses to go on without it. */
export async function agentSandbox(mode: AgentSandboxMode): Promise<string | null> {
  if (mode === 'none') return null;
  const binary = await probeBubblewrap();
  if (!binary && mode === 'bwrap')
    throw new Error(
      'TWS_AGENT_SANDBOX=bwrap, but bubblewrap does not run a sandbox on this host (install the Debian package bubblewrap; user namespaces or root are needed)',
    );
  return binary;
}

export async function agentIsolation(mode: AgentSandboxMode): Promise<AgentIsolation> {
  return (await agentSandbox(mode)) ? 'bwrap' : 'none';
}

/** slirp4netns (Debian's package), the user-mode network of `egress`, found once per process by running it. */
let slirpProbed: Promise<string | null> | null = null;
function probeSlirp(): Promise<string | null> {
  slirpProbed ??= new Promise((resolve) =>
    execFile('slirp4netns', ['--version'], { timeout: 10_000 }, (err) => resolve(err ? null : 'slirp4netns')),
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
}

/** A folder made when missing, and usable only when it is exactly there (no link on the way). */
async function exactFolder(p: string): Promise<boolean> {
  await mkdir(p, { recursive: true });
  return isExactFolder(p);
}

/**
 * The binds of the repositories' common git dirs an agent works in (domain/sandbox.ts
 * gitStoreBinds), and the key folders of the task stores made for them (git/agent-objects.ts):
 * its own worktrees' admin folders are those whose registered path lies in its workspace. In the
 * source checkout itself (`local`), `hooks/` and `info/` are made when missing, so that they can
 * be bound read-only: an empty folder, as `git init` makes them.
 */
export async function gitStoreLayout(
  slots: AgentGitSlot[],
  workspace: string,
  dataDir: string,
): Promise<{ binds: GitBind[]; storeKeyDirs: string[] }> {
  const binds: GitBind[] = [];
  const storeKeyDirs: string[] = [];
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
      if (entries.includes('worktrees')) {
        for (const id of await readdir(path.join(commonDir, 'worktrees'))) {
          const adminDir = path.join(commonDir, 'worktrees', id);
          const registered = (await readFile(path.join(adminDir, 'gitdir'), 'utf8').catch(() => '')).trim();
          if (registered && isWithinFolder(path.dirname(registered), workspace) && (await isRealDirectory(adminDir)))
            ownAdminDirs.push(adminDir);
        }
      }
      // One store per repository of the workspace (a task holds a repository once).
      const first = ofRepository.find((slot) => slot.worktreePath !== null);
      if (first?.worktreePath) {
        objectStore = await prepareObjectStore(dataDir, first.worktreePath, commonDir);
        if (objectStore) storeKeyDirs.push(objectStoreKeyDir(dataDir, first.worktreePath));
      }
      for (const folder of new Set(ofRepository.map((slot) => slot.refFolder).filter((f): f is string => f !== null))) {
        // A folder reached through a link is not bound: the branch is then read-only (fail closed).
        if (
          (await exactFolder(path.join(commonDir, folder))) &&
          (await exactFolder(path.join(commonDir, 'logs', folder)))
        )
          ownRefFolders.push(folder);
      }
    }
    binds.push(...gitStoreBinds({ commonDir, insideWorkspace, entries, ownAdminDirs, objectStore, ownRefFolders }));
  }
  return { binds, storeKeyDirs };
}
