/**
 * The process starter (git/process-starter.ts): commands started through the small helper behave
 * as Node's own children for what the service uses (output, exit code, signal, a missing binary,
 * kill, output to a file, a detached child), git.ts's commands go through it, and when the helper
 * ends a command it ran fails while a detached child runs on. Real processes throughout.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { gitAt } from '../git/git';
import { ProcessStarter, type StartedProcess } from '../git/process-starter';
import { NOT_RUN_EXIT_CODE, STARTER_MARK, STARTER_SOURCE } from '../git/process-starter-helper';
import { processAlive } from './support/world';

const scratch = mkdtempSync(path.join(tmpdir(), 'tws-starter-'));
const detachedPids: number[] = [];
afterAll(() => {
  for (const pid of detachedPids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  rmSync(scratch, { recursive: true, force: true });
});

interface Outcome {
  stdout: string;
  stderr: string;
  events: string[];
  code: number | null;
  signal: NodeJS.Signals | null;
  error: string | null;
}

/** Everything a caller sees of a child, in order; 'close' ends it. */
function observe(child: ChildProcess | StartedProcess): Promise<Outcome> {
  const out: Outcome = { stdout: '', stderr: '', events: [], code: null, signal: null, error: null };
  child.stdout?.on('data', (d: Buffer) => (out.stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out.stderr += d.toString()));
  child.on('spawn', () => out.events.push('spawn'));
  child.on('error', (e: NodeJS.ErrnoException) => {
    out.events.push('error');
    out.error = e.code ?? e.message;
  });
  child.on('exit', () => out.events.push('exit'));
  return new Promise((resolve) =>
    child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
      out.events.push('close');
      resolve({ ...out, code, signal });
    }),
  );
}

/** The fields of /proc/<pid>/stat after the command: state, ppid, pgid, … */
const statOf = (pid: number): string[] => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
};
const parentOf = (pid: number): number => Number(statOf(pid)[1]);
const cmdlineOf = (pid: number): string => readFileSync(`/proc/${pid}/cmdline`, 'latin1');
const waitFor = async (what: string, check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
};

describe('the process starter', () => {
  it('gives what Node gives for output, exit codes, signals and a missing binary; all output arrives before close', async () => {
    const starter = new ProcessStarter();
    const cases: [string, string[]][] = [
      ['sh', ['-c', 'echo out; echo err >&2; exit 3']],
      ['sh', ['-c', 'head -c 1048576 /dev/zero | tr "\\0" a; exit 0']],
      ['sh', ['-c', 'kill -TERM $$']],
      [path.join(scratch, 'no-such-binary'), []],
    ];
    for (const [file, args] of cases) {
      const [node, started] = await Promise.all([
        observe(spawn(file, args, { cwd: scratch })),
        observe(starter.spawn(file, args, { cwd: scratch })),
      ]);
      expect(started, `${file} ${args.join(' ')}`).toEqual(node);
    }
  });

  it('kills on request, and appends a detached child output to a file; that child leads its own group and its exit is reported', async () => {
    const starter = new ProcessStarter();
    const sleeper = starter.spawn('sleep', ['30']);
    const ended = observe(sleeper);
    await new Promise((r) => sleeper.once('spawn', r));
    sleeper.kill('SIGTERM');
    expect((await ended).signal).toBe('SIGTERM');

    const log = path.join(scratch, 'detached.log');
    writeFileSync(log, 'before\n');
    const child = starter.spawn('sh', ['-c', 'echo "$WHO"; sleep 0.3; exit 5'], {
      detached: true,
      output: { appendTo: log },
      env: { WHO: 'detached', PATH: process.env.PATH },
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code: number | null) => resolve(code)));
    await new Promise((r) => child.once('spawn', r));
    child.unref();
    const pid = child.pid!;
    detachedPids.push(pid);
    expect(child.stdout).toBeNull();
    expect(Number(statOf(pid)[2])).toBe(pid); // its own process group
    expect(cmdlineOf(parentOf(pid))).toContain(STARTER_MARK); // started by the helper, not by this process
    expect(await exited).toBe(5);
    expect(readFileSync(log, 'utf8')).toBe('before\ndetached\n');
  });

  it('gives a detached child its start time as /proc says it, also one that ended at once (read before the helper could reap it)', async () => {
    const starter = new ProcessStarter();
    const sleeper = starter.spawn('sleep', ['30'], { detached: true, output: 'ignore' });
    await new Promise((r) => sleeper.once('spawn', r));
    sleeper.unref();
    detachedPids.push(sleeper.pid!);
    expect(sleeper.startTime).toBe(statOf(sleeper.pid!)[19]);
    // Ten that end at once: each is gone (reaped) by the time anyone else could read its /proc entry.
    for (let i = 0; i < 10; i++) {
      const quick = starter.spawn('true', [], { detached: true, output: 'ignore' });
      const exited = new Promise((r) => quick.once('exit', r));
      await new Promise((r) => quick.once('spawn', r));
      await exited;
      expect(processAlive(quick.pid!)).toBe(false);
      expect(quick.startTime).toMatch(/^[0-9]+$/);
      expect(Number(quick.startTime)).toBeGreaterThanOrEqual(Number(sleeper.startTime));
    }
    // Not asked for a command run attached (git's): nothing is read for it.
    const attached = starter.spawn('true', []);
    await observe(attached);
    expect(attached.startTime).toBeNull();
  });

  it("routes git.ts's commands through the helper: git's parent is the starter, not this process", async () => {
    const binary = path.join(scratch, 'git-parent.sh');
    const parents = path.join(scratch, 'parents.txt');
    writeFileSync(binary, `#!/bin/sh\necho $PPID >> '${parents}'\nexec git "$@"\n`);
    chmodSync(binary, 0o755);
    const top = await gitAt(process.cwd(), { binary }).raw(['rev-parse', '--show-toplevel']);
    expect(top.trim()).not.toBe('');
    const parent = Number(readFileSync(parents, 'utf8').trim());
    expect(parent).not.toBe(process.pid);
    expect(cmdlineOf(parent)).toContain(STARTER_MARK);
    expect(parentOf(parent)).toBe(process.pid);
  });

  it("when the helper ends, a command it ran fails (error, the not-run exit code, never git's 1), a detached child runs on, and the next start uses a new helper", async () => {
    const starter = new ProcessStarter();
    const detached = starter.spawn('sleep', ['30'], { detached: true, output: 'ignore' });
    await new Promise((r) => detached.once('spawn', r));
    detachedPids.push(detached.pid!);
    let detachedExit = false;
    detached.once('exit', () => (detachedExit = true));
    const running = starter.spawn('sleep', ['30']);
    const outcome = observe(running);
    await new Promise((r) => running.once('spawn', r));
    const helper = parentOf(running.pid!);
    expect(cmdlineOf(helper)).toContain(STARTER_MARK);
    process.kill(helper, 'SIGKILL');
    const failed = await outcome;
    expect(failed.code).toBe(NOT_RUN_EXIT_CODE);
    expect(failed.events).toEqual(['spawn', 'error', 'exit', 'close']);
    expect(detachedExit).toBe(false);
    expect(processAlive(detached.pid!)).toBe(true);
    process.kill(running.pid!, 'SIGKILL');

    const next = await observe(starter.spawn('sh', ['-c', 'echo again']));
    expect(next).toMatchObject({ stdout: 'again\n', code: 0 });
    await waitFor('the first helper to be reaped', () => !processAlive(helper));
  });

  it('a helper whose reader is gone (the process it serves died) ends quietly, as when its requests end', async () => {
    // The helper's events have no reader: its stdout's read end is closed, its requests still open.
    const helper = spawn(process.execPath, ['-e', STARTER_SOURCE], { stdio: ['pipe', 'pipe', 'pipe'], env: {} });
    let stderr = '';
    helper.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    helper.stdout!.destroy();
    const ended = new Promise<number | null>((resolve) => helper.once('close', (code) => resolve(code)));
    // Something to tell: a command's start (and its end).
    helper.stdin!.write(
      JSON.stringify({ id: 1, file: 'sh', args: ['-c', 'exit 0'], env: {}, detached: false, output: 'ignore' }) + '\n',
    );
    expect(await ended).toBe(0);
    expect(stderr).toBe('');
    helper.stdin!.destroy();
  });
});
