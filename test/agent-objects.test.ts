/**
 * Bringing a task store home trusts nothing in it: an agent writes the store. With real
 * git and real files: a forged loose object (a name its content does not hash to) and garbage are
 * left where they are, a folder of the store swapped for a link to another repository's objects
 * is not followed, a real object and a real pack come home (the pack re-indexed by git), and what
 * came home leaves the store.
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { bringObjectsHome } from '../git/agent-objects-home';
import { discardObjectStore, objectStoreKeyDir, objectStoreOf, prepareObjectStore } from '../git/agent-objects';
import { git, makeRepo } from './support/world';

const scratch = mkdtempSync(path.join(tmpdir(), 'tws-agent-objects-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A loose object file as git writes it, for content `body` of `type`, under the name git gives it. */
function looseObject(repoForHash: string, type: string, body: string): { name: string; data: Buffer } {
  const name = execFileSync('git', ['hash-object', '-t', type, '--stdin'], {
    cwd: repoForHash,
    input: body,
    encoding: 'utf8',
  }).trim();
  return {
    name,
    data: deflateSync(Buffer.concat([Buffer.from(`${type} ${Buffer.byteLength(body)}\0`), Buffer.from(body)])),
  };
}

function put(store: string, name: string, data: Buffer): void {
  mkdirSync(path.join(store, name.slice(0, 2)), { recursive: true });
  writeFileSync(path.join(store, name.slice(0, 2), name.slice(2)), data);
}

const hasObject = (repo: string, name: string): boolean => {
  try {
    execFileSync('git', ['cat-file', '-e', name], { cwd: repo, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

describe('bringing a task store home', () => {
  it('real objects and packs come home and leave the store; forged ones, garbage and links stay out', async () => {
    const repo = makeRepo(scratch, 'home');
    const victim = makeRepo(scratch, 'victim');
    const dataDir = path.join(scratch, 'data');
    const worktree = path.join(scratch, 'ws', 'task-x', 'home');
    const store = prepareObjectStore(dataDir, worktree, path.join(repo, '.git'))!;
    expect(store).toBe(objectStoreOf(objectStoreKeyDir(dataDir, worktree)));
    expect(readFileSync(path.join(store, 'info', 'alternates'), 'utf8')).toBe(
      `${path.join(repo, '.git', 'objects', 'tws-base')}\n`,
    );

    const real = looseObject(repo, 'blob', "the agent's work\n");
    put(store, real.name, real.data);
    // A forged object: real content under another object's name.
    const claimed = looseObject(repo, 'blob', 'what the name promises\n');
    put(store, claimed.name, looseObject(repo, 'blob', 'something else\n').data);
    // Garbage under an object's name.
    const garbage = looseObject(repo, 'blob', 'garbage name\n');
    put(store, garbage.name, Buffer.from('not zlib at all'));
    // A folder swapped for a link to another repository's objects: never followed.
    // An object of its own whose name is fixed (a commit's changes with the clock): its folder then
    // never shares a name with the store's own objects above (it did, one run in a hundred).
    const victimObject = execFileSync('git', ['hash-object', '-w', '--stdin'], {
      cwd: victim,
      input: "the victim's own object\n",
      encoding: 'utf8',
    }).trim();
    expect([real.name, claimed.name, garbage.name].map((n) => n.slice(0, 2))).not.toContain(victimObject.slice(0, 2));
    symlinkSync(
      path.join(victim, '.git', 'objects', victimObject.slice(0, 2)),
      path.join(store, victimObject.slice(0, 2)),
    );
    // A pack the agent's git wrote (a repack, a fetch): re-indexed by git at home.
    const packed = makeRepo(scratch, 'packed', { files: { 'p.txt': 'packed work\n' } });
    git(packed, 'repack', '-q', '-a', '-d');
    const packDir = path.join(packed, '.git', 'objects', 'pack');
    for (const file of readdirSync(packDir))
      writeFileSync(path.join(store, 'pack', file), readFileSync(path.join(packDir, file)));
    const packedHead = git(packed, 'rev-parse', 'HEAD');

    const done = await bringObjectsHome(dataDir, worktree, 'git');
    expect(done).toEqual({ loose: 1, packs: 1, refused: 2 });
    expect(hasObject(repo, real.name)).toBe(true);
    expect(git(repo, 'cat-file', '-p', real.name)).toBe("the agent's work");
    expect(hasObject(repo, packedHead)).toBe(true);
    expect(hasObject(repo, claimed.name)).toBe(false);
    expect(hasObject(repo, garbage.name)).toBe(false);
    expect(hasObject(repo, victimObject)).toBe(false);
    git(repo, 'fsck', '--strict');
    // What came home left the store; what did not stays; the victim is untouched.
    expect(existsSync(path.join(store, real.name.slice(0, 2), real.name.slice(2)))).toBe(false);
    expect(readdirSync(path.join(store, 'pack'))).toEqual([]);
    expect(existsSync(path.join(store, claimed.name.slice(0, 2), claimed.name.slice(2)))).toBe(true);
    expect(hasObject(victim, victimObject)).toBe(true);

    // Once more: nothing new, nothing done.
    expect(await bringObjectsHome(dataDir, worktree, 'git')).toEqual({ loose: 0, packs: 0, refused: 2 });
    await discardObjectStore(dataDir, worktree);
    expect(existsSync(objectStoreKeyDir(dataDir, worktree))).toBe(false);
    expect(hasObject(victim, victimObject)).toBe(true);
    // No store: nothing to do.
    expect(await bringObjectsHome(dataDir, worktree, 'git')).toEqual({ loose: 0, packs: 0, refused: 0 });
  });

  it('a repository whose objects folder is a link gets no store: nothing is bound writable', async () => {
    const repo = makeRepo(scratch, 'linked');
    const elsewhere = path.join(scratch, 'elsewhere-objects');
    execFileSync('mv', [path.join(repo, '.git', 'objects'), elsewhere]);
    symlinkSync(elsewhere, path.join(repo, '.git', 'objects'));
    expect(
      prepareObjectStore(path.join(scratch, 'data2'), path.join(scratch, 'ws2', 'linked'), path.join(repo, '.git')),
    ).toBeNull();
  });
});
