/**
 * CPU time per process from /proc/<pid>/stat (utime + stime, plus the reaped children's
 * cutime + cstime: git and agent processes count towards whoever started them). Taken around
 * measured blocks, it says where a launch's CPU goes on a machine where CPU is the limit.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { STARTER_MARK } from '../git/process-starter-helper';

const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** Milliseconds of CPU of a process and its reaped children (`reaped`: the children's alone). */
function cpuMs(pid: number, reaped = false): number {
  const f = statFields(pid);
  if (!f) return 0;
  // After the command: state is field 3, so utime (14) … cstime (17) are indexes 11 … 14.
  const ticks = (reaped ? 0 : Number(f[11]) + Number(f[12])) + Number(f[13]) + Number(f[14]);
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/**
 * The suffix of a group's second figure: the CPU of the processes it started that ended and
 * were reaped in the stretch (git, agents and their shims), already counted in the group's own.
 * A child's whole life is counted when it is reaped: an agent's shim started at launch is
 * counted in the cleanup that stops it.
 */
export const REAPED_SUFFIX = ': of it, reaped children';

function childrenOf(parent: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(Number(entry));
    if (f && Number(f[1]) === parent) out.push(Number(entry));
  }
  return out;
}

/** A process's live process starter (git/process-starter.ts): the git and agent processes it reaped are the process's. */
const knownStarters = new Map<number, { pids: number[]; at: number }>();
export function startersOf(parent: number): number[] {
  // Found once and kept while they live: a scan of /proc per memory sample would load the machine.
  const known = knownStarters.get(parent);
  if (known && known.pids.length > 0 && known.pids.every((pid) => Number(statFields(pid)?.[1]) === parent))
    return known.pids;
  if (known && known.pids.length === 0 && Date.now() - known.at < 5000) return [];
  const pids = childrenOf(parent).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(STARTER_MARK);
    } catch {
      return false;
    }
  });
  knownStarters.set(parent, { pids, at: Date.now() });
  return pids;
}

/**
 * Named groups of processes: a pid counts with its process starter; a group given as { tree: pid }
 * also counts the pid's live children (PostgreSQL's backends).
 */
export type CpuGroups = Record<string, number | { tree: number }>;

export class CpuMeter {
  constructor(private readonly groups: CpuGroups) {}

  /** A restarted service is the same group under a new pid (bench/services.ts restartWorker). */
  retarget(name: string, pid: number): void {
    if (typeof this.groups[name] === 'number') this.groups[name] = pid;
  }

  snapshot(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, g] of Object.entries(this.groups)) {
      const pids = typeof g === 'number' ? [g, ...startersOf(g)] : [g.tree, ...childrenOf(g.tree)];
      out[name] = pids.reduce((s, pid) => s + cpuMs(pid), 0);
      if (typeof g === 'number') out[`${name}${REAPED_SUFFIX}`] = pids.reduce((s, pid) => s + cpuMs(pid, true), 0);
    }
    return out;
  }
}

/** Accumulates CPU per group over many measured stretches, to divide by the work done in them. */
export class CpuAccount {
  readonly totalMs: Record<string, number> = {};
  constructor(private readonly meter: CpuMeter | null) {}

  async around<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.meter) return fn();
    const before = this.meter.snapshot();
    try {
      return await fn();
    } finally {
      const after = this.meter.snapshot();
      for (const name of Object.keys(after))
        this.totalMs[name] = (this.totalMs[name] ?? 0) + Math.max(0, after[name]! - (before[name] ?? 0));
    }
  }

  /** Milliseconds of CPU per unit of work (one launch, one worktree), by group. */
  per(units: number): Record<string, number> {
    return Object.fromEntries(
      Object.entries(this.totalMs).map(([name, ms]) => [name, Math.round((ms / Math.max(1, units)) * 10) / 10]),
    );
  }
}
