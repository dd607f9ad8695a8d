/**
 * A ref that does not exist and a ref that could not be read are different answers: a launch or a
 * task's creation refuses a missing branch with a 400, and must never say so because git failed
 * (a corrupt object, a git that could not start or was killed under a busy machine).
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { branchCommit, resolveCommit } from '../git/branches';
import { gitAt } from '../git/git';
import { BRANCH_MISSING, checkRepository } from '../git/repository-check';
import { git, makeRepo } from './support/world';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'tws-ref-reads-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function wrapper(name: string, body: string): string {
  const file = path.join(scratch, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

describe('reading a ref', () => {
  const repo = makeRepo(scratch, 'repo', { branches: ['feature'] });
  const host = {
    gitBinary: 'git',
    repositoryRoots: [],
    workspaceRoot: path.join(scratch, 'ws'),
    dataDir: path.join(scratch, 'data'),
  };

  it('answers the commit of a branch, and null for one that does not exist', async () => {
    const g = gitAt(repo, { binary: 'git' });
    expect(await branchCommit(g, 'feature')).toBe(git(repo, 'rev-parse', 'refs/heads/feature').trim());
    expect(await branchCommit(g, 'no-such-branch')).toBeNull();
    expect(await checkRepository({ path: repo, defaultBranch: 'no-such-branch' }, host)).toEqual({
      ok: false,
      problem: BRANCH_MISSING,
    });
  });

  it('throws, and never answers "missing", when git could not start, was killed, or failed', async () => {
    const killed = wrapper('killed-git', 'kill -9 $$');
    const failing = wrapper('failing-git', 'echo "fatal: something broke" >&2\nexit 128');
    for (const binary of [path.join(scratch, 'no-such-git'), killed, failing]) {
      await expect(resolveCommit(gitAt(repo, { binary }), 'refs/heads/main')).rejects.toThrow();
      await expect(
        checkRepository({ path: repo, defaultBranch: 'main' }, { ...host, gitBinary: binary }),
      ).rejects.toThrow();
    }
  });

  it('throws for a branch whose commit is corrupt: it exists, and cannot be read', async () => {
    const broken = makeRepo(scratch, 'broken');
    git(broken, 'branch', 'damaged');
    const commit = git(broken, 'rev-parse', 'refs/heads/damaged').trim();
    // The loose object of the commit both branches point at, overwritten (git makes it read-only).
    const object = path.join(broken, '.git', 'objects', commit.slice(0, 2), commit.slice(2));
    chmodSync(object, 0o644);
    writeFileSync(object, 'not a zlib stream');
    await expect(branchCommit(gitAt(broken, { binary: 'git' }), 'damaged')).rejects.toThrow();
    await expect(checkRepository({ path: broken, defaultBranch: 'damaged' }, host)).rejects.toThrow();
    // A branch that is really not there is still told apart.
    expect(await branchCommit(gitAt(broken, { binary: 'git' }), 'absent')).toBeNull();
  });
});
