/**
 * The git folders an agent's sandbox binds: for each repository of its
 * workspace, its common git dir read-only, the task's own object store and ref folders writable,
 * its own worktrees' registrations writable with their pointer files read-only. Read and prepared
 * before every sandboxed start (executors/host/agent-identity.ts sandboxedCommand).
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gitStoreBinds, type GitBind } from '../../domain/sandbox';
import { isWithinFolder } from '../../domain/task-layout';
import { isExactFolder, objectStoreKeyDir, prepareObjectStore } from '../../git/agent-objects';
import { isRealDirectorySync } from './workspace-fs';
import { WORKTREE_LOCK_REASON } from '../../git/worktrees';

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
function exactFolder(p: string): boolean {
  mkdirSync(p, { recursive: true });
  return isExactFolder(p);
}

/**
 * The binds of the repositories' common git dirs an agent works in (domain/sandbox.ts
 * gitStoreBinds), the key folders of the task stores made for them (git/agent-objects.ts), what the
 * agent's uid must own there (its object stores, its ref folders, its worktrees' admin folders) and
 * the pointers git follows that are shown read-only. Its own worktrees' admin folders
 * are those registered for a slot's worktree exactly (`gitdir` names `<worktree>/.git`, a
 * regular file only the service writes); one whose pointers are not plain files is not made
 * writable at all (its agent's git then fails, no other task's). In the source checkout itself
 * (`local`), `hooks/` and `info/` are made when missing, so that they can be bound read-only: an
 * empty folder, as `git init` makes them.
 *
 * Synchronous: on the path of every sandboxed start, some twenty syscalls of microseconds each, where
 * as promises of the thread pool each waited behind the others (3 ms of an attach's 50).
 */
export function gitStoreLayout(
  slots: AgentGitSlot[],
  workspace: string,
  dataDir: string,
): { binds: GitBind[]; storeKeyDirs: string[]; owned: string[]; readOnlyFiles: string[]; refFolders: string[] } {
  const byCommonDir = new Map<string, AgentGitSlot[]>();
  for (const slot of slots) byCommonDir.set(slot.commonDir, [...(byCommonDir.get(slot.commonDir) ?? []), slot]);
  // In slot order.
  const layouts = [...byCommonDir].map(([commonDir, ofRepository]) =>
    repositoryLayout(commonDir, ofRepository, workspace, dataDir),
  );
  const present = layouts.filter((l): l is RepositoryLayout => l !== null);
  return {
    binds: present.flatMap((l) => l.binds),
    storeKeyDirs: present.flatMap((l) => l.storeKeyDirs),
    owned: present.flatMap((l) => l.owned),
    readOnlyFiles: present.flatMap((l) => l.readOnlyFiles),
    refFolders: present.flatMap((l) => l.refFolders),
  };
}

interface RepositoryLayout {
  binds: GitBind[];
  storeKeyDirs: string[];
  owned: string[];
  readOnlyFiles: string[];
  /** The ref folders (absolute) the agent moves its branch in: watched while it runs (executors/host/ref-moves.ts). */
  refFolders: string[];
}

/** gitStoreLayout for one common git dir; null when it is gone meanwhile (left out, as before). */
function repositoryLayout(
  commonDir: string,
  ofRepository: AgentGitSlot[],
  workspace: string,
  dataDir: string,
): RepositoryLayout | null {
  const insideWorkspace = isWithinFolder(commonDir, workspace);
  // A listing that fails of a folder that is there stops the start.
  if (!isRealDirectorySync(commonDir)) return null;
  if (insideWorkspace) for (const name of ['hooks', 'info']) mkdirSync(path.join(commonDir, name), { recursive: true });
  const entries = readdirSync(commonDir);
  const layout: RepositoryLayout = { binds: [], storeKeyDirs: [], owned: [], readOnlyFiles: [], refFolders: [] };
  let ownAdminDirs: string[] = [];
  let objectStore: string | null = null;
  let ownRefFolders: string[] = [];
  if (!insideWorkspace) {
    // Its registrations, its task store and its ref folders: independent of one another.
    const admin = entries.includes('worktrees') ? ownRegistrations(commonDir, ofRepository) : [];
    const store = taskStore(commonDir, ofRepository, dataDir);
    const refs = refFoldersOf(commonDir, ofRepository);
    ownAdminDirs = admin.map((a) => a.adminDir);
    layout.owned.push(...ownAdminDirs);
    layout.readOnlyFiles.push(...admin.flatMap((a) => a.pointers));
    if (store) {
      objectStore = store.objectStore;
      layout.storeKeyDirs.push(store.keyDir);
      layout.owned.push(store.objectStore);
    }
    ownRefFolders = refs;
    layout.refFolders.push(...refs.map((folder) => path.join(commonDir, folder)));
    layout.owned.push(
      ...refs.flatMap((folder) => [path.join(commonDir, folder), path.join(commonDir, 'logs', folder)]),
    );
  }
  layout.binds.push(
    ...gitStoreBinds({ commonDir, insideWorkspace, entries, ownAdminDirs, objectStore, ownRefFolders }),
  );
  return layout;
}

/**
 * Each worktree's registration is looked for where its records (an attach's inventory) or git's
 * own naming (after the worktree's folder) put it: a read or two, whatever the number of worktrees
 * of the repository (reading every registration's gitdir took an attach 4 ms with a hundred). All
 * are read only for a worktree not found so (a first launch where git added a number to a name
 * already taken). Those whose pointers are plain files, with them.
 */
function ownRegistrations(commonDir: string, ofRepository: AgentGitSlot[]): { adminDir: string; pointers: string[] }[] {
  const worktrees = new Set(ofRepository.map((slot) => slot.worktreePath).filter((p): p is string => p !== null));
  const registrations = path.join(commonDir, 'worktrees');
  const found = new Map<string, string>(); // registration folder → its worktree
  for (const slot of ofRepository) {
    const worktree = slot.worktreePath;
    if (worktree === null) continue;
    for (const id of new Set([slot.worktreeId, path.basename(worktree)])) {
      if (!id || id.includes('/') || id === '..') continue;
      const adminDir = path.join(registrations, id);
      if (registeredWorktree(adminDir) !== worktree) continue;
      found.set(adminDir, worktree);
      break;
    }
  }
  if (found.size < worktrees.size)
    for (const id of readdirSync(registrations)) {
      const adminDir = path.join(registrations, id);
      const worktree = found.has(adminDir) ? null : registeredWorktree(adminDir);
      if (worktree && worktrees.has(worktree)) found.set(adminDir, worktree);
    }
  const own = [...found].map(([adminDir, worktree]) => {
    if (!isRealDirectorySync(adminDir)) return null;
    const pointers = protectedPointers(adminDir, worktree);
    return pointers ? { adminDir, pointers } : null;
  });
  return own.filter((o): o is { adminDir: string; pointers: string[] } => o !== null);
}

/** One store per repository of the workspace (a task holds a repository once), or null. */
function taskStore(
  commonDir: string,
  ofRepository: AgentGitSlot[],
  dataDir: string,
): { objectStore: string; keyDir: string } | null {
  const first = ofRepository.find((slot) => slot.worktreePath !== null);
  if (!first?.worktreePath) return null;
  const objectStore = prepareObjectStore(dataDir, first.worktreePath, commonDir);
  return objectStore ? { objectStore, keyDir: objectStoreKeyDir(dataDir, first.worktreePath) } : null;
}

/** The ref folders the agents move, made when missing; one reached through a link is not bound: the branch is then read-only (fail closed). */
function refFoldersOf(commonDir: string, ofRepository: AgentGitSlot[]): string[] {
  const folders = [...new Set(ofRepository.map((slot) => slot.refFolder).filter((f): f is string => f !== null))];
  // Both made whatever the first answers (as when they were made side by side).
  return folders.filter((folder) =>
    [exactFolder(path.join(commonDir, folder)), exactFolder(path.join(commonDir, 'logs', folder))].every(Boolean),
  );
}

/** The worktree a registration folder names (its `gitdir` without `/.git`), or null. */
function registeredWorktree(adminDir: string): string | null {
  let registered = '';
  try {
    registered = readFileSync(path.join(adminDir, 'gitdir'), 'utf8').trim();
  } catch {
    // No registration there (or none readable): not this worktree's.
  }
  return registered.endsWith('/.git') ? registered.slice(0, -'/.git'.length) : null;
}

/**
 * The pointer files of a worktree registration, each a plain file (config.worktree made empty where
 * absent, and `locked` made where a worktree added before the service locked its worktrees has
 * none: git/worktrees.ts says why): else null. `locked` is among them, read-only to the agent.
 */
function protectedPointers(adminDir: string, worktree: string): string[] | null {
  const files = [
    path.join(adminDir, 'gitdir'),
    path.join(adminDir, 'commondir'),
    path.join(adminDir, 'config.worktree'),
    path.join(adminDir, 'locked'),
  ];
  // git reads config.worktree only with extensions.worktreeConfig; made (empty) so that it can be bound read-only.
  for (const [file, text] of [
    [files[2]!, ''],
    [files[3]!, WORKTREE_LOCK_REASON],
  ] as const) {
    try {
      writeFileSync(file, text, { flag: 'wx', mode: 0o644 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  const dotGit = path.join(worktree, '.git');
  const plain = [...files, dotGit].every((file) => {
    try {
      return lstatSync(file).isFile();
    } catch {
      return false; // gone or unreadable: not a plain file, so not made writable
    }
  });
  return plain ? [...files, dotGit] : null;
}
