/**
 * What supervising one agent costs, shared by scenario 12 (bench/scenarios/supervision.ts,
 * run by `make bench`) and the standalone bench/supervisor-cost.ts. N agents (`sleep 60`) are
 * started under the old node shim (bench/node-shim.ts), under the C supervisor
 * (.tools/agent-supervisor, as the product starts it: status file, log, log cap, not sandboxed)
 * and beside two shell floors (`sh -c 'exec sleep 60'`, which leaves no wrapper at all, and
 * `sh -c 'sleep 60; exit $?'`, a shell that stays as the agent's parent). For each supervising
 * process: its PSS (/proc/<pid>/smaps_rollup) and RSS once started, and its CPU to start, read
 * ~200 ms after the start from /proc/<pid>/task/<tid>/schedstat (nanoseconds on CPU, every
 * thread; /proc/<pid>/stat counts in 10 ms ticks, too coarse for this). The agent itself (the
 * `sleep` a supervisor or a shell wrapper forks) is another process and not counted; the
 * `exec sleep` floor is the shell and then the `sleep` it became, in one pid.
 *
 * Every process is started as the product starts its agents: through this process's process
 * starter (git/process-starter.ts, a small node helper), detached in its own process group. The
 * CPU to start includes the exec out of that helper (the same for every kind: the floor shows
 * it), so each kind's p50 is also given above the `exec sleep` floor.
 */
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AGENT_SUPERVISOR } from '../executors/host/agent-shim';
import { processStarter } from '../git/process-starter';
import { SHIM_NODE_FLAGS, SHIM_SOURCE } from './node-shim';
import { sleep } from './processes';
import { median } from './stats';

const AGENT = ['sleep', '60'];

type SupervisionRole = 'before' | 'now' | 'floor' | 'wrapper';

interface Kind {
  name: string;
  role: SupervisionRole;
  argv: (statusFile: string, logFile: string) => [string, string[]];
}

const supervised =
  (file: string, pre: string[]) =>
  (statusFile: string, logFile: string): [string, string[]] => [
    file,
    [...pre, statusFile, logFile, String(10 * 1024 * 1024), '0', ...AGENT],
  ];

const KINDS: Kind[] = [
  {
    name: 'node shim (before)',
    role: 'before',
    argv: supervised(process.execPath, [...SHIM_NODE_FLAGS, '-e', SHIM_SOURCE]),
  },
  { name: 'C supervisor (now)', role: 'now', argv: supervised(AGENT_SUPERVISOR, []) },
  { name: "sh -c 'exec sleep 60' (floor)", role: 'floor', argv: () => ['sh', ['-c', 'exec sleep 60']] },
  {
    name: "sh -c 'sleep 60; exit $?' (a shell wrapper)",
    role: 'wrapper',
    argv: () => ['sh', ['-c', 'sleep 60; exit $?']],
  },
];

interface SupervisionKindResult {
  name: string;
  role: SupervisionRole;
  /** PSS and RSS once started, in MB: p50 and max over the agents. */
  pssMb: { p50: number; max: number };
  rssMb: { p50: number; max: number };
  /** Milliseconds on CPU of the supervising process ~200 ms after its start: p50 and max. */
  cpuMs: { p50: number; max: number };
  /** cpuMs.p50 minus the `exec sleep` floor's. */
  cpuAboveFloorMs: number;
}

export interface SupervisionResult {
  agents: number;
  startedBy: string;
  kinds: SupervisionKindResult[];
  /** The C supervisor's figures, the ones judged. */
  supervisor: { pssP50Mb: number; cpuP50Ms: number; cpuAboveFloorP50Ms: number };
}

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

const r2 = (x: number) => Math.round(x * 100) / 100;
const max = (xs: number[]): number => Math.max(...xs);

async function measureKind(
  kind: Kind,
  scratch: string,
  agents: number,
): Promise<{ pssKb: number[]; rssKb: number[]; cpuMs: number[] }> {
  const pids: number[] = [];
  try {
    for (let i = 0; i < agents; i++) {
      const base = path.join(scratch, `${kind.role}-${i}`);
      closeSync(openSync(`${base}.log`, 'a'));
      const [file, args] = kind.argv(`${base}.exit`, `${base}.log`);
      const child = processStarter().spawn(file, args, {
        detached: true,
        output: { appendTo: `${base}.log` },
        env: { PATH: process.env.PATH, TWS_EXECUTION_ID: `bench-${i}` },
      });
      const pid = await new Promise<number>((resolve, reject) => {
        child.once('spawn', () => resolve(child.pid!));
        child.once('error', reject);
      });
      child.unref();
      pids.push(pid);
    }
    // All of them started and settled: ~200 ms after the last start.
    await sleep(200);
    const result = { pssKb: [] as number[], rssKb: [] as number[], cpuMs: [] as number[] };
    for (const pid of pids) {
      result.pssKb.push(kb(pid, 'smaps_rollup', 'Pss') ?? NaN);
      result.rssKb.push(kb(pid, 'status', 'VmRSS') ?? NaN);
      result.cpuMs.push(cpuNs(pid) / 1e6);
    }
    return result;
  } finally {
    for (const pid of pids) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await sleep(300);
  }
}

/** `agents` of each kind, one kind after the other, in a scratch folder removed after. */
export async function measureSupervision(agents: number): Promise<SupervisionResult> {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'tws-supervisor-cost-'));
  try {
    const raw = [];
    for (const kind of KINDS) raw.push({ kind, r: await measureKind(kind, scratch, agents) });
    if (raw.some(({ r }) => r.pssKb.some((x) => !Number.isFinite(x))))
      throw new Error('a supervising process ended before it was measured (is .tools/agent-supervisor built?)');
    const floorCpu = median(raw.find(({ kind }) => kind.role === 'floor')!.r.cpuMs);
    const kinds: SupervisionKindResult[] = raw.map(({ kind, r }) => ({
      name: kind.name,
      role: kind.role,
      pssMb: { p50: r2(median(r.pssKb) / 1024), max: r2(max(r.pssKb) / 1024) },
      rssMb: { p50: r2(median(r.rssKb) / 1024), max: r2(max(r.rssKb) / 1024) },
      cpuMs: { p50: r2(median(r.cpuMs)), max: r2(max(r.cpuMs)) },
      cpuAboveFloorMs: r2(median(r.cpuMs) - floorCpu),
    }));
    const now = kinds.find((k) => k.role === 'now')!;
    return {
      agents,
      startedBy: 'the process starter (git/process-starter.ts), detached, as the product starts its agents',
      kinds,
      supervisor: { pssP50Mb: now.pssMb.p50, cpuP50Ms: now.cpuMs.p50, cpuAboveFloorP50Ms: now.cpuAboveFloorMs },
    };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The result as a Markdown table (the standalone script prints it). */
export function supervisionTable(s: SupervisionResult): string[] {
  return [
    '| supervising process | PSS p50 (max) | RSS p50 | CPU to start p50 (max) | CPU above the floor |',
    '|---|---|---|---|---|',
    ...s.kinds.map(
      (k) =>
        `| ${k.name} | ${k.pssMb.p50.toFixed(2)} MB (${k.pssMb.max.toFixed(2)}) | ${k.rssMb.p50.toFixed(1)} MB | ` +
        `${k.cpuMs.p50.toFixed(2)} ms (${k.cpuMs.max.toFixed(2)}) | ${k.cpuAboveFloorMs.toFixed(2)} ms |`,
    ),
  ];
}
