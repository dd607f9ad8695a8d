/**
 * A task's repositories on a remote machine: clones made from git bundles of the host's
 * repositories, streamed over the SSH channel (the remote needs no git server, nothing is pushed),
 * read back as facts, and undone exactly. Each function is one round trip of a script of
 * remote-scripts.ts; this side decides what the facts mean.
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { branchCommits, branchRef } from '../git/branches';
import { gitAt } from '../git/git';
import type { SshTarget } from './connection';
import {
  absolutePath,
  DISCARD_SLOTS,
  MATERIALIZE_REFUSALS,
  MATERIALIZE_SLOT,
  READ_WORKSPACE,
  RemoteOperationError,
  runScript,
} from './remote-scripts';

export const HOST_GIT = { binary: 'git' };

/** Materializing streams a whole repository's history: minutes, not seconds. */
const MATERIALIZE_TIMEOUT_MS = 15 * 60_000;

export interface RemoteSlotSpec {
  repoPath: string;
  branch: string;
  baseBranch: string;
  createBranch: boolean;
  sourcePath: string /* the repository on THIS (the service's) host */;
}

/** A branch name git accepts, checked on the host before it reaches a script as `refs/heads/<name>`. */
export async function validBranch(name: string): Promise<boolean> {
  if (!name || name.startsWith('-')) return false;
  return gitAt(os.tmpdir(), HOST_GIT)
    .raw(['check-ref-format', '--allow-onelevel', branchRef(name)])
    .then(
      () => true,
      () => false,
    );
}

/** What the remote clone starts from, decided from the host's refs: the bundle then holds exactly those refs. */
function cloneMode(
  hostHas: Map<string, string>,
  slot: RemoteSlotSpec,
): { mode: 'checkout' | 'create' | 'branch_missing' | 'base_missing'; refs: string[] } {
  const refs = [slot.baseBranch, slot.branch]
    .filter((b, i, all) => hostHas.has(b) && all.indexOf(b) === i)
    .map(branchRef);
  if (hostHas.has(slot.branch)) return { mode: 'checkout', refs };
  if (!slot.createBranch) return { mode: 'branch_missing', refs };
  return { mode: hostHas.has(slot.baseBranch) ? 'create' : 'base_missing', refs };
}

/**
 * One repository of a task on the remote (see the brief in remote-scripts.ts MATERIALIZE_SLOT).
 * createdBranch says the branch was made from the base (the host had none): the same answer on an
 * idempotent re-run that adopts the clone, which a crashed first run made.
 */
export async function materializeRemoteSlot(
  target: SshTarget,
  a: { taskFolder: string; markerText: string; slot: RemoteSlotSpec },
): Promise<{ headCommit: string; createdBranch: boolean; createdClone: boolean }> {
  const { slot } = a;
  if (!(await validBranch(slot.branch)) || !(await validBranch(slot.baseBranch)))
    throw new RemoteOperationError('invalid_branch');
  const source = gitAt(slot.sourcePath, HOST_GIT);
  const { mode, refs } = cloneMode(await branchCommits(source, [slot.branch, slot.baseBranch]), slot);
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'tws-bundle-'));
  try {
    const bundle = path.join(scratch, 'slot.bundle');
    let stdin: Buffer | NodeJS.ReadableStream = Buffer.alloc(0);
    if (mode === 'checkout' || mode === 'create') {
      await source.raw(['bundle', 'create', '--quiet', bundle, ...refs]);
      stdin = createReadStream(bundle);
    }
    const args = [
      absolutePath(a.taskFolder),
      a.markerText,
      absolutePath(slot.repoPath),
      slot.branch,
      slot.baseBranch,
      mode,
    ];
    const result = await runScript(target, MATERIALIZE_SLOT, args, { stdin, timeoutMs: MATERIALIZE_TIMEOUT_MS });
    if (result.code !== 0) throw new RemoteOperationError(MATERIALIZE_REFUSALS[result.code!] ?? 'materialize_failed');
    const match = /^(adopted|created) ([0-9a-f]{40,64})\n$/.exec(result.stdout.toString('utf8'));
    if (!match) throw new RemoteOperationError('materialize_unreadable');
    return { headCommit: match[2]!, createdBranch: mode === 'create', createdClone: match[1] === 'created' };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * The exact undo of a launch: removes a clone only when it is clean and still at headCommit on its
 * branch, in the task folder whose marker is markerText; else keeps it. A slot already absent counts
 * as removed (the undo's goal holds). The marker goes only when nothing was kept, the folder only
 * when empty.
 */
export async function discardRemoteSlots(
  target: SshTarget,
  a: { taskFolder: string; markerText: string; slots: { repoPath: string; branch: string; headCommit: string }[] },
): Promise<{ removed: number; kept: number }> {
  const args = [
    absolutePath(a.taskFolder),
    a.markerText,
    ...a.slots.flatMap((s) => [absolutePath(s.repoPath), s.branch, s.headCommit]),
  ];
  const result = await runScript(target, DISCARD_SLOTS, args);
  const tokens = result.stdout.toString('utf8').split('\n').filter(Boolean);
  if (result.code !== 0 || tokens.length !== a.slots.length) throw new RemoteOperationError('discard_failed');
  const kept = tokens.filter((t) => t === 'kept').length;
  return { removed: tokens.length - kept, kept };
}

export interface RemoteSlotFacts {
  repoPath: string;
  exists: boolean;
  realDirectory: boolean /* a directory and not a symlink */;
  toplevel: string | null /* git rev-parse --show-toplevel, realpath */;
  branch: string | null /* symbolic-ref --short HEAD */;
  head: string | null;
  dirty: 'clean' | 'dirty' | 'unreadable' | null /* only when asked */;
}

/**
 * Read-only, one round trip: the marker's text (null if absent; an unreadable marker reads as ''
 * which equals no marker text, so it counts as someone else's), whether workspacePath is a real
 * directory, each slot's facts. Changes nothing: no fetch, no index refresh.
 */
export async function readRemoteWorkspace(
  target: SshTarget,
  a: { taskFolder: string; workspacePath: string; repoPaths: string[]; withDirty: boolean },
): Promise<{ marker: string | null; workspaceIsRealDirectory: boolean; slots: RemoteSlotFacts[] }> {
  const args = [
    absolutePath(a.taskFolder),
    absolutePath(a.workspacePath),
    a.withDirty ? '1' : '0',
    ...a.repoPaths.map(absolutePath),
  ];
  const result = await runScript(target, READ_WORKSPACE, args);
  const fields = result.stdout.toString('utf8').split('\0');
  if (result.code !== 0 || fields.length !== 2 + 6 * a.repoPaths.length + 1 || fields.at(-1) !== '')
    throw new RemoteOperationError('facts_unreadable');
  let i = 0;
  const next = (): string => fields[i++]!;
  const nullable = (): string | null => {
    const field = next();
    return field.startsWith('=') ? field.slice(1) : null;
  };
  const markerField = next();
  const marker =
    markerField === 'n'
      ? null
      : markerField.startsWith('m')
        ? Buffer.from(markerField.slice(1), 'base64').toString('utf8')
        : '';
  const workspaceIsRealDirectory = next() === '1';
  const slots = a.repoPaths.map((repoPath): RemoteSlotFacts => {
    const exists = next() === '1';
    const realDirectory = next() === '1';
    const toplevel = nullable();
    const branch = nullable();
    const head = nullable();
    const dirty = nullable();
    return {
      repoPath,
      exists,
      realDirectory,
      toplevel,
      branch,
      head,
      dirty: dirty === 'clean' || dirty === 'dirty' ? dirty : dirty === null ? null : 'unreadable',
    };
  });
  return { marker, workspaceIsRealDirectory, slots };
}
