/**
 * What supervising one agent costs (issue 28): N agents (`sleep 60`) started under the old node
 * shim (bench/node-shim.ts), under the C supervisor (.tools/agent-supervisor) and beside two shell
 * floors (`sh -c 'exec sleep 60'`, which leaves no wrapper at all, and `sh -c 'sleep 60; exit $?'`,
 * a shell that stays as the agent's parent). For each supervising process: its PSS
 * (/proc/<pid>/smaps_rollup) and RSS once started, and its CPU to start, read ~200 ms after the
 * start from /proc/<pid>/task/<tid>/schedstat (nanoseconds on CPU, every thread; /proc/<pid>/stat
 * counts in 10 ms ticks, too coarse for this). That CPU includes the exec out of the node process
 * that spawned it (a few ms, the same for every kind: the floor shows it), so the table also gives
 * each p50 above the `exec sleep` floor. p50 and max over N; the target is ≤ 1 MB PSS and ≤ 5 ms CPU.
 *
 *   node --import tsx bench/supervisor-cost.ts      # N=20; SUPERVISOR_BENCH_N=50 for more
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AGENT_SUPERVISOR } from '../executors/host/agent-shim';
import { SHIM_NODE_FLAGS, SHIM_SOURCE } from './node-shim';

const N = Number(process.env.SUPERVISOR_BENCH_N ?? 20);
const AGENT = ['sleep', '60'];

interface Kind {
  name: string;
  argv: (statusFile: string, logFile: string) => [string, string[]];
}

const supervised =
  (file: string, pre: string[]) =>
  (statusFile: string, logFile: string): [string, string[]] => [
    file,
    [...pre, statusFile, logFile, String(10 * 1024 * 1024), '0', ...AGENT],
  ];

const KINDS: Kind[] = [
  { name: 'node shim (before)', argv: supervised(process.execPath, [...SHIM_NODE_FLAGS, '-e', SHIM_SOURCE]) },
  { name: 'C supervisor (now)', argv: supervised(AGENT_SUPERVISOR, []) },
  { name: "sh -c 'exec sleep 60' (floor)", argv: () => ['sh', ['-c', 'exec sleep 60']] },
  { name: "sh -c 'sleep 60; exit $?' (a shell wrapper)", argv: () => ['sh', ['-c', 'sleep 60; exit $?']] },
];

const kb = (pid: number, file: string, field: string): number | null => {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/${file}`, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
};

/** Nanoseconds on CPU of every thread of the process (the first field of each schedstat). */
function cpuNs(pid: number): number {
  let total = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`))
    total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
  return total;
}

const p50 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const max = (xs: number[]): number => Math.max(...xs);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function measure(kind: Kind, scratch: string): Promise<{ pssKb: number[]; rssKb: number[]; cpuMs: number[] }> {
  const pids: number[] = [];
  for (let i = 0; i < N; i++) {
    const base = path.join(scratch, `${kind.name.replace(/\W+/g, '-')}-${i}`);
    const log = openSync(`${base}.log`, 'a');
    const [file, args] = kind.argv(`${base}.exit`, `${base}.log`);
    const child = spawn(file, args, {
      detached: true,
      stdio: ['ignore', log, log],
      env: { PATH: process.env.PATH, TWS_EXECUTION_ID: `bench-${i}` },
    });
    closeSync(log);
    await new Promise<void>((resolve, reject) => child.once('spawn', resolve).once('error', reject));
    child.unref();
    pids.push(child.pid!);
  }
  // All of them started and settled: ~200 ms after the last start.
  await sleep(200);
  const result = { pssKb: [] as number[], rssKb: [] as number[], cpuMs: [] as number[] };
  for (const pid of pids) {
    result.pssKb.push(kb(pid, 'smaps_rollup', 'Pss') ?? NaN);
    result.rssKb.push(kb(pid, 'status', 'VmRSS') ?? NaN);
    result.cpuMs.push(cpuNs(pid) / 1e6);
  }
  for (const pid of pids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await sleep(300);
  return result;
}

async function main(): Promise<void> {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'tws-supervisor-cost-'));
  try {
    const rows: string[] = [];
    rows.push(`Supervisor cost per agent, N=${N} each (${os.cpus().length} cores, ${os.release()}):`);
    rows.push('| supervising process | PSS p50 (max) | RSS p50 | CPU to start p50 (max) | CPU above the floor |');
    rows.push('|---|---|---|---|---|');
    const results = [];
    for (const kind of KINDS) results.push({ kind, r: await measure(kind, scratch) });
    const floorCpu = p50(results[2]!.r.cpuMs);
    for (const { kind, r } of results) {
      rows.push(
        `| ${kind.name} | ${(p50(r.pssKb) / 1024).toFixed(2)} MB (${(max(r.pssKb) / 1024).toFixed(2)}) | ` +
          `${(p50(r.rssKb) / 1024).toFixed(1)} MB | ${p50(r.cpuMs).toFixed(2)} ms (${max(r.cpuMs).toFixed(2)}) | ` +
          `${(p50(r.cpuMs) - floorCpu).toFixed(2)} ms |`,
      );
    }
    rows.push('Target: ≤ 1 MB PSS and ≤ 5 ms CPU to start per agent.');
    console.log(rows.join('\n'));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

void main();
