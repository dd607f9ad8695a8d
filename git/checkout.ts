/**
 * What a checkout is (its top level, common git dir, HEAD and branch), read only: the gateway's
 * input checks and the removal audit ask it before they trust a path.
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { gitAt, run, type GitOptions } from './git';

/** What git says of a folder that is no checkout with a work tree (none, or a bare repository). */
const NOT_A_WORK_TREE = /not a git repository|must be run in a work tree/i;

/**
 * Absolute top level of the checkout containing dir, symlinks resolved; null when git says it is
 * not in a work tree. Any other failure (git could not be started, or was killed under load) is
 * thrown, not read as "no repository": a transient failure must not be reported as a permanent one.
 */
export async function showToplevel(dir: string, options: GitOptions): Promise<string | null> {
  let out: string;
  try {
    // Whoever owns it (a person's checkout, not the service's): rev-parse runs no program.
    out = (await run(gitAt(dir, { ...options, anyOwner: true }), ['rev-parse', '--show-toplevel'])).trim();
  } catch (err) {
    if (err instanceof Error && NOT_A_WORK_TREE.test(err.message)) return null;
    throw err;
  }
  return out ? await realpath(out) : null;
}

/** Absolute common git dir (shared by all worktrees of a repository), symlinks resolved. */
export async function commonDir(dir: string, options: GitOptions): Promise<string | null> {
  try {
    const out = (await run(gitAt(dir, options), ['rev-parse', '--git-common-dir'])).trim();
    return out ? await realpath(path.resolve(dir, out)) : null;
  } catch {
    return null;
  }
}

/** The current branch's short name, or null when HEAD is detached or missing. */
export async function currentBranch(dir: string, options: GitOptions): Promise<string | null> {
  try {
    const out = (await run(gitAt(dir, options), ['symbolic-ref', '--quiet', '--short', 'HEAD'])).trim();
    return out || null;
  } catch {
    return null;
  }
}

/**
 * A checkout's HEAD commit and the branch it is on (null: detached), from one git process; null
 * when unreadable. The removal audit reads it just before it removes (R6.6).
 */
export async function headAndBranch(
  dir: string,
  options: GitOptions,
): Promise<{ head: string; branch: string | null } | null> {
  try {
    const [head, ref] = (await run(gitAt(dir, options), ['rev-parse', 'HEAD', '--symbolic-full-name', 'HEAD']))
      .trim()
      .split('\n')
      .map((line) => line.trim());
    if (!head || !/^[0-9a-f]{40,64}$/.test(head) || !ref) return null;
    return { head, branch: ref.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : null };
  } catch {
    return null;
  }
}

/**
 * A checkout's top level and its absolute common git dir (symlinks resolved), from one git
 * process (`showToplevel` and `commonDir` in one); null when it is not a checkout with a work tree.
 */
export async function checkoutIdentity(
  dir: string,
  options: GitOptions,
): Promise<{ toplevel: string; commonDir: string } | null> {
  try {
    const [toplevel, common] = (await run(gitAt(dir, options), ['rev-parse', '--show-toplevel', '--git-common-dir']))
      .split('\n')
      .map((line) => line.trim());
    if (!toplevel || !common) return null;
    const [realTop, realCommon] = await Promise.all([realpath(toplevel), realpath(path.resolve(dir, common))]);
    return { toplevel: realTop, commonDir: realCommon };
  } catch {
    return null;
  }
}
