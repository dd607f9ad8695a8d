/**
 * git/checkout.ts tells "git says this is no work tree" (a refusal the user can act on) from git
 * failing for another reason (not started, killed under load): the second is thrown, so that a
 * transient failure is never reported as a permanent "not a git repository".
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { showToplevel } from '../git/checkout';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'tws-checkout-errors-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('showToplevel', () => {
  it('is null for a plain folder and for a bare repository, and the top level for a checkout', async () => {
    const plain = mkdtempSync(path.join(scratch, 'plain-'));
    const bare = mkdtempSync(path.join(scratch, 'bare-'));
    const checkout = mkdtempSync(path.join(scratch, 'checkout-'));
    execFileSync('git', ['init', '-q', '--bare', bare]);
    execFileSync('git', ['init', '-q', checkout]);
    expect(await showToplevel(plain, { binary: 'git' })).toBeNull();
    expect(await showToplevel(bare, { binary: 'git' })).toBeNull();
    expect(await showToplevel(checkout, { binary: 'git' })).toBe(checkout);
  });

  it('throws when git fails for another reason (here: killed), instead of saying "no repository"', async () => {
    const checkout = mkdtempSync(path.join(scratch, 'killed-'));
    execFileSync('git', ['init', '-q', checkout]);
    const killed = path.join(scratch, 'git-killed');
    writeFileSync(killed, '#!/bin/sh\necho "error: resource temporarily unavailable" >&2\nkill -KILL $$\n');
    chmodSync(killed, 0o755);
    await expect(showToplevel(checkout, { binary: killed })).rejects.toThrow();
  });
});
