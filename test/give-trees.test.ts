/**
 * Giving a workspace to its agent uid (executors/host/agent-owner.ts giveTreesExcept) on real files,
 * as root: every folder and file of the tree becomes the uid's, a link is given itself and what it
 * points to is left alone, the kept pointers stay root's, and a tree larger than one batch is given
 * whole.
 */
import { lstatSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { giveTreesExcept } from '../executors/host/agent-owner';

const UID = 234567;
const scratch = mkdtempSync(path.join(tmpdir(), 'tws-give-trees-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('giving a tree to an agent uid', () => {
  it('gives every entry, links themselves, never what a link points to, and never a kept file', async () => {
    const tree = path.join(scratch, 'tree');
    const outside = path.join(scratch, 'service-secret');
    const outsideFolder = path.join(scratch, 'service-folder');
    mkdirSync(path.join(tree, 'src', 'deep', 'deeper'), { recursive: true });
    mkdirSync(outsideFolder);
    writeFileSync(outside, 'secret');
    writeFileSync(path.join(outsideFolder, 'inside.txt'), 'x');
    writeFileSync(path.join(tree, 'README.md'), 'x');
    writeFileSync(path.join(tree, 'src', 'deep', 'deeper', 'a.ts'), 'x');
    writeFileSync(path.join(tree, '.git'), 'gitdir: somewhere\n');
    writeFileSync(path.join(tree, 'src', 'kept'), 'x');
    symlinkSync(outside, path.join(tree, 'src', 'to-file'));
    symlinkSync(outsideFolder, path.join(tree, 'src', 'to-folder'));

    await giveTreesExcept([tree], UID, [path.join(tree, '.git'), path.join(tree, 'src', 'kept')]);

    for (const entry of ['', 'README.md', 'src', 'src/deep', 'src/deep/deeper', 'src/deep/deeper/a.ts'])
      expect(lstatSync(path.join(tree, entry)).uid, entry || 'the top').toBe(UID);
    // The links are the uid's; their targets stay root's.
    expect(lstatSync(path.join(tree, 'src', 'to-file')).uid).toBe(UID);
    expect(lstatSync(path.join(tree, 'src', 'to-folder')).uid).toBe(UID);
    expect(lstatSync(outside).uid).toBe(0);
    expect(lstatSync(outsideFolder).uid).toBe(0);
    expect(lstatSync(path.join(outsideFolder, 'inside.txt')).uid).toBe(0);
    // The kept pointers stay root's.
    expect(lstatSync(path.join(tree, '.git')).uid).toBe(0);
    expect(lstatSync(path.join(tree, 'src', 'kept')).uid).toBe(0);
  });

  it('gives a top that is a link as the link, and a tree of a thousand files whole', async () => {
    const target = path.join(scratch, 'link-target');
    mkdirSync(target);
    const link = path.join(scratch, 'top-link');
    symlinkSync(target, link);
    const big = path.join(scratch, 'big');
    for (let d = 0; d < 10; d++) {
      mkdirSync(path.join(big, `d${d}`), { recursive: true });
      for (let f = 0; f < 100; f++) writeFileSync(path.join(big, `d${d}`, `f${f}`), '');
    }

    await giveTreesExcept([link, big], UID, []);

    expect(lstatSync(link).uid).toBe(UID);
    expect(lstatSync(target).uid).toBe(0);
    for (let d = 0; d < 10; d++)
      for (const f of [0, 57, 99]) expect(lstatSync(path.join(big, `d${d}`, `f${f}`)).uid).toBe(UID);
  });

  it('refuses, as one failure that names no path, a tree that cannot be given', async () => {
    const file = path.join(scratch, 'plain');
    writeFileSync(file, '');
    // A file where a folder is named on the way: neither a folder nor gone.
    await expect(giveTreesExcept([path.join(file, 'below')], UID, [])).rejects.toThrow(
      'the workspace could not be given to its agent uid',
    );
  });
});
