/**
 * Resident memory of the service processes, from /proc/<pid>/status: VmRSS sampled every
 * 200 ms, and VmHWM (the kernel's peak), reset at the start of a measured window by writing
 * 5 to /proc/<pid>/clear_refs so start-up (bundling the workflows) does not count.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { startersOf } from './cpu';

export interface MemoryWindowResult {
  /** Highest sampled VmRSS inside the window, in MB. */
  peakRssMb: number | null;
  /** VmHWM read at the end of the window, in MB; reset at its start when the kernel allowed it. */
  hwmMb: number | null;
  hwmReset: boolean;
  samples: number;
  /** Its process starter (git/process-starter.ts), a process of its own: highest sampled VmRSS, and its PSS at the end (the node binary's pages are shared), in MB. */
  starterPeakRssMb?: number | null;
  starterPssMb?: number | null;
  /** Highest sampled VmRSS of each scenario in the window (the one running when it was sampled), in MB: where the peak happened. */
  peakByScenarioMb?: Record<string, number>;
}

/** A `<field>: <n> kB` line of a /proc file of the process; null when it cannot be read. */
function procKb(pid: number, file: 'status' | 'smaps_rollup', field: string): number | null {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/${file}`, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

export const statusKb = (pid: number, field: 'VmRSS' | 'VmHWM'): number | null => procKb(pid, 'status', field);
export const pssKb = (pid: number): number | null => procKb(pid, 'smaps_rollup', 'Pss');

const mb = (kb: number | null): number | null => (kb === null ? null : Math.round((kb / 1024) * 10) / 10);

export class MemorySampler {
  private timer: NodeJS.Timeout | null = null;
  private window: {
    peakKb: Record<string, number>;
    starterPeakKb: Record<string, number>;
    byScenarioKb: Record<string, Record<string, number>>;
    samples: number;
    reset: Record<string, boolean>;
  } | null = null;
  /** The whole run's sampled peak, for the record. */
  readonly runPeakKb: Record<string, number> = {};

  /** `scenario` names what runs when a sample is taken. */
  constructor(
    private readonly pids: Record<string, number>,
    private readonly scenario: () => string = () => '',
    private readonly everyMs = 200,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.sample(), this.everyMs);
    this.timer.unref();
  }

  /** A restarted service is sampled under its new pid (its VmHWM starts again with the process). */
  retarget(name: string, pid: number): void {
    if (name in this.pids) this.pids[name] = pid;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** `opening`: the window's first sample, taken before its first scenario runs (no scenario's). */
  private sample(opening = false): void {
    for (const [name, pid] of Object.entries(this.pids)) {
      const kb = statusKb(pid, 'VmRSS');
      if (kb === null) continue;
      this.runPeakKb[name] = Math.max(this.runPeakKb[name] ?? 0, kb);
      if (this.window) {
        this.window.peakKb[name] = Math.max(this.window.peakKb[name] ?? 0, kb);
        if (!opening) {
          const byScenario = (this.window.byScenarioKb[name] ??= {});
          const now = this.scenario();
          byScenario[now] = Math.max(byScenario[now] ?? 0, kb);
        }
        const starterKb = startersOf(pid).reduce((sum, starter) => sum + (statusKb(starter, 'VmRSS') ?? 0), 0);
        this.window.starterPeakKb[name] = Math.max(this.window.starterPeakKb[name] ?? 0, starterKb);
      }
    }
    if (this.window) this.window.samples++;
  }

  openWindow(): void {
    const reset: Record<string, boolean> = {};
    for (const [name, pid] of Object.entries(this.pids)) {
      try {
        writeFileSync(`/proc/${pid}/clear_refs`, '5');
        reset[name] = true;
      } catch {
        reset[name] = false;
      }
    }
    this.window = { peakKb: {}, starterPeakKb: {}, byScenarioKb: {}, samples: 0, reset };
    this.sample(true);
  }

  closeWindow(): Record<string, MemoryWindowResult> {
    this.sample();
    const w = this.window;
    this.window = null;
    const out: Record<string, MemoryWindowResult> = {};
    for (const [name, pid] of Object.entries(this.pids)) {
      const starters = startersOf(pid);
      out[name] = {
        peakRssMb: mb(w?.peakKb[name] ?? null),
        hwmMb: mb(statusKb(pid, 'VmHWM')),
        hwmReset: w?.reset[name] ?? false,
        samples: w?.samples ?? 0,
        starterPeakRssMb: mb(w?.starterPeakKb[name] || null),
        starterPssMb: mb(starters.length ? starters.reduce((sum, starter) => sum + (pssKb(starter) ?? 0), 0) : null),
        peakByScenarioMb: Object.fromEntries(
          Object.entries(w?.byScenarioKb[name] ?? {}).map(([scenario, kb]) => [scenario, mb(kb)!]),
        ),
      };
    }
    return out;
  }

  current(name: string): number | null {
    const pid = this.pids[name];
    return pid === undefined ? null : mb(statusKb(pid, 'VmRSS'));
  }
}
