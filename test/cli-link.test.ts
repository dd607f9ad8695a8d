/**
 * `make cli`: `tws` on the PATH as a link to this checkout's bin/tws.mjs, in the folder BINDIR (or
 * PREFIX/bin) names, said where; the link runs from any folder (bin/tws.mjs finds its compiled CLI
 * from its own real place). A file of that name that is not a link is someone else's: left alone.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { lstatSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = path.resolve(__dirname, '..');
let scratch = '';

/** A person's shell: no variable of an enclosing make (`make test` runs this file) nor of the service. */
function personEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!/^(TWS_|VITEST|NODE_OPTIONS$|MAKELEVEL$|MAKEFLAGS$|MFLAGS$|BINDIR$|PREFIX$)/.test(key)) env[key] = value;
  return { ...env, ...extra };
}

const makeCli = (vars: string[]) =>
  spawnSync('make', ['--no-print-directory', 'cli', ...vars], { cwd: root, env: personEnv(), encoding: 'utf8' });

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'tws-cli-link-'));
});

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('make cli', () => {
  it('links tws into BINDIR, says where and that the PATH lacks it, and the link runs from another folder', () => {
    const bindir = path.join(scratch, 'bin');
    const made = makeCli([`BINDIR=${bindir}`]);
    expect(made.status, `${made.stdout}\n${made.stderr}`).toBe(0);
    const link = path.join(bindir, 'tws');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe(path.join(root, 'bin', 'tws.mjs'));
    expect(made.stdout).toContain(`cli: ${link} → ${path.join(root, 'bin', 'tws.mjs')}`);
    expect(made.stdout).toContain(`cli: ${bindir} is not on your PATH`);

    // As a person runs it once the folder is on the PATH: by name, from a folder far from the checkout.
    const elsewhere = path.join(scratch, 'elsewhere');
    execFileSync('mkdir', ['-p', elsewhere]);
    const env = personEnv({ PATH: `${bindir}:${process.env.PATH ?? ''}` });
    const help = execFileSync('sh', ['-c', 'exec tws --help'], { cwd: elsewhere, env, encoding: 'utf8' });
    expect(help).toMatch(/^usage: tws <command>/);

    // Again: the same link, said the same way.
    const again = makeCli([`BINDIR=${bindir}`]);
    expect(again.status).toBe(0);
    expect(again.stdout).not.toContain('led to');
    expect(readlinkSync(link)).toBe(path.join(root, 'bin', 'tws.mjs'));
  });

  it('PREFIX puts it in PREFIX/bin; a link of another checkout is replaced and said; a file that is not a link is left alone', async () => {
    const prefix = path.join(scratch, 'prefix');
    await mkdir(path.join(prefix, 'bin'), { recursive: true });
    execFileSync('ln', ['-s', '/elsewhere/bin/tws.mjs', path.join(prefix, 'bin', 'tws')]);
    const made = makeCli([`PREFIX=${prefix}`]);
    expect(made.status, `${made.stdout}\n${made.stderr}`).toBe(0);
    expect(made.stdout).toContain(`led to /elsewhere/bin/tws.mjs; it now leads to this checkout`);
    expect(readlinkSync(path.join(prefix, 'bin', 'tws'))).toBe(path.join(root, 'bin', 'tws.mjs'));

    const taken = path.join(scratch, 'taken');
    await mkdir(taken);
    writeFileSync(path.join(taken, 'tws'), 'someone else\n');
    const refused = makeCli([`BINDIR=${taken}`]);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain(`cli: ${path.join(taken, 'tws')} exists and is not a link`);
    expect(readFileSync(path.join(taken, 'tws'), 'utf8')).toBe('someone else\n');
  });
});
