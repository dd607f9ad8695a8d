/**
 * The agent supervisor (native/agent-supervisor.c), run for real through its argv
 * contract [statusFile, logFile, maxLogBytes, sandboxed, command, ...args], detached in a process
 * group of its own as the service starts it: the exit record it leaves, the log it keeps within
 * its cap, the group's SIGTERM it outlives, and what it costs in memory.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AGENT_SUPERVISOR } from '../executors/host/agent-shim';
import { waitUntil } from './support/scenario';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'tws-supervisor-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let runs = 0;
/** Starts the supervisor as executors/host/agents.ts does: detached, its own output appended to the log. */
function supervise(command: string[], opts: { maxLogBytes?: number; sandboxed?: string } = {}) {
  const base = path.join(scratch, `run-${++runs}`);
  const files = { status: `${base}.exit`, log: `${base}.log` };
  const log = openSync(files.log, 'a');
  const child = spawn(
    AGENT_SUPERVISOR,
    [files.status, files.log, String(opts.maxLogBytes ?? 1024 * 1024), opts.sandboxed ?? '0', ...command],
    {
      detached: true,
      stdio: ['ignore', log, log],
      env: { PATH: process.env.PATH, TWS_EXECUTION_ID: `exec-${runs}`, TWS_SESSION_ID: 'session' },
    },
  );
  closeSync(log);
  const ended = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { pid: child.pid!, files, ended };
}

const RECORD = (exitCode: string, signal: string, extra = '') =>
  new RegExp(
    `^\\{"exitCode":${exitCode},"signal":${signal}${extra},"endedAt":"\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z"\\}$`,
  );

describe('the agent supervisor', () => {
  it('records an exit code and a signal death exactly, fsynced into a 0600 file, and then ends itself', async () => {
    for (const [command, expected, sandboxed] of [
      [['sh', '-c', 'exit 5'], RECORD('5', 'null'), '0'],
      [['sh', '-c', 'kill -KILL $$'], RECORD('null', '"SIGKILL"'), '0'],
      // Bubblewrap ends with 128 + N for a child ended by signal N: read back as that signal.
      [['sh', '-c', 'exit 143'], RECORD('null', '"SIGTERM"'), '1'],
      [['sh', '-c', 'exit 143'], RECORD('143', 'null'), '0'],
      [['no-such-agent-command'], RECORD('127', 'null', ',"error":"ENOENT"'), '0'],
    ] as const) {
      const run = supervise([...command], { sandboxed });
      expect(await run.ended).toEqual({ code: 0, signal: null });
      const written = readFileSync(run.files.status, 'utf8');
      expect(written, command.join(' ')).toMatch(expected);
      const endedAt = Date.parse((JSON.parse(written) as { endedAt: string }).endedAt);
      expect(Math.abs(Date.now() - endedAt)).toBeLessThan(10_000);
      expect(statSync(run.files.status).mode & 0o777).toBe(0o600);
      expect(existsSync(`${run.files.status}.tmp`)).toBe(false);
    }
  });

  it('keeps the log within its cap by rotating to <log>.1 past half of it, the newest output kept', async () => {
    // About 390 KB of numbered lines through a cap of 16 KiB: each file at most 8 KiB.
    const run = supervise(['sh', '-c', 'i=0; while [ $i -lt 40000 ]; do echo "line $i"; i=$((i+1)); done'], {
      maxLogBytes: 16 * 1024,
    });
    await run.ended;
    expect(readFileSync(run.files.status, 'utf8')).toMatch(RECORD('0', 'null'));
    const older = readFileSync(`${run.files.log}.1`, 'utf8');
    const newest = readFileSync(run.files.log, 'utf8');
    expect(older.length).toBeLessThanOrEqual(8 * 1024);
    expect(newest.length).toBeLessThanOrEqual(8 * 1024);
    expect(newest.endsWith('line 39999\n')).toBe(true);
    // The two files together are one unbroken stretch of the newest lines.
    const lines = (older + newest).split('\n').slice(1, -1);
    const first = Number(lines[0]!.split(' ')[1]);
    expect(lines).toEqual(lines.map((_, i) => `line ${first + i}`));
    expect(first).toBeGreaterThan(38000);
  });

  it("outlives the group's SIGTERM that ends its agent and records the agent's death by it", async () => {
    const run = supervise(['sleep', '60']);
    const agent = await waitForChild(run.pid);
    process.kill(-run.pid, 'SIGTERM');
    expect(await run.ended).toEqual({ code: 0, signal: null });
    expect(readFileSync(run.files.status, 'utf8')).toMatch(RECORD('null', '"SIGTERM"'));
    expect(existsSync(`/proc/${agent}`)).toBe(false);
  });

  it('costs under 1 MB of PSS, keeps its execution mark for re-identification and gives the agent none', async () => {
    const run = supervise(['sleep', '60']);
    const agent = await waitForChild(run.pid);
    const pssKb = Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${run.pid}/smaps_rollup`, 'utf8'))![1]);
    expect(pssKb).toBeLessThan(1024);
    const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    expect(environ(run.pid)).toContain(`TWS_EXECUTION_ID=exec-${runs}`);
    expect(environ(agent).some((v) => v.startsWith('TWS_EXECUTION_ID='))).toBe(false);
    expect(environ(agent)).toContain('TWS_SESSION_ID=session');
    process.kill(-run.pid, 'SIGKILL');
    await run.ended;
  });
});

/** The supervisor's child once it runs the agent (its exec done: no longer the supervisor's image). */
async function waitForChild(pid: number): Promise<number> {
  let child = 0;
  await waitUntil(async () => {
    const listed = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    child = Number(listed.split(' ')[0]);
    return child > 0 && readFileSync(`/proc/${child}/cmdline`, 'utf8').startsWith('sleep\0');
  }, 'the agent to start');
  return child;
}
