/**
 * A process is identified by pid AND its start time (clock ticks since boot, field 22 of
 * /proc/<pid>/stat), never by pid alone: a reused pid has another start time. An agent also
 * carries its execution id in its environment, so one whose spawn was never recorded (the
 * process that spawned it died first) can still be found: by that mark, never by a guess.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { readdir, readFile, readlink } from 'node:fs/promises';
import path from 'node:path';

/** The variable that marks an agent process with its execution id. */
export const EXECUTION_MARK = 'TWS_EXECUTION_ID';

interface ProcStat {
  state: string;
  pgid: number;
  startTime: string;
}

function parseStat(stat: string): ProcStat {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0]!, pgid: Number(fields[2]), startTime: fields[19]! };
}

async function procStat(pid: number): Promise<ProcStat | null> {
  try {
    return parseStat(await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

function procStatSync(pid: number): ProcStat | null {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'latin1'));
  } catch {
    return null;
  }
}

export async function processStartTime(pid: number): Promise<string | null> {
  const stat = await procStat(pid);
  if (!stat || stat.state === 'Z' || stat.state === 'X') return null; // exited, not yet reaped
  return stat.startTime ?? null;
}

/** Linux's USER_HZ, the unit of a start time: 100 on every architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** How long ago (ms) a process of this start time started, by the kernel's clock since boot; null where /proc does not say. */
export async function processAgeMs(startTime: string): Promise<number | null> {
  const uptime = Number((await readFile('/proc/uptime', 'utf8').catch(() => '')).split(' ')[0]);
  const ticks = Number(startTime);
  if (!Number.isFinite(uptime) || uptime <= 0 || !Number.isFinite(ticks)) return null;
  return Math.max(0, Math.round(uptime * 1000 - (ticks * 1000) / CLOCK_TICKS_PER_SECOND));
}

export async function isSameProcess(pid: number, startTime: string): Promise<boolean> {
  return (await processStartTime(pid)) === startTime;
}

export interface MarkedGroup {
  /** The process group the marked processes belong to (the agent was its leader). */
  pgid: number;
  /** The leader itself when it still runs: pid = pgid, with its start time. */
  leader: { pid: number; startTime: string } | null;
}

/**
 * The live process group marked with this execution id, or null. Reads /proc: only the rare
 * paths (a re-run after a death, a stop of an unrecorded spawn, the reconcile) pay for it.
 */
export async function findMarkedGroup(executionId: string): Promise<MarkedGroup | null> {
  const mark = Buffer.from(`${EXECUTION_MARK}=${executionId}\0`);
  let found: MarkedGroup | null = null;
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    let environ: Buffer;
    try {
      environ = await readFile(`/proc/${pid}/environ`);
    } catch {
      continue; // gone, or not ours to read
    }
    const at = environ.indexOf(mark);
    if (at < 0 || (at > 0 && environ[at - 1] !== 0)) continue;
    const stat = await procStat(pid);
    if (!stat || stat.state === 'Z' || stat.state === 'X') continue;
    if (stat.pgid === pid) return { pgid: pid, leader: { pid, startTime: stat.startTime } };
    found ??= { pgid: stat.pgid, leader: null };
  }
  return found;
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

/**
 * SIGTERM to each process of the group except the sandbox's own (bubblewrap): a bubblewrap
 * ended by the signal takes its pid namespace down with SIGKILL at once, so the agent inside
 * would never get its grace period to save its work. Without a sandbox, or when /proc cannot
 * be read, the whole group is signalled.
 *
 * Whether there is a sandbox is read from the leader's descendants (their /proc children lists,
 * a few files), not from a scan of every process: with none of them a bubblewrap, the group is
 * signalled at once. With one, those same descendants are the group's members: the sandbox runs
 * with --unshare-pid --die-with-parent (domain/sandbox.ts), so outside its namespace the group
 * holds only the leader (the agent's shim) and bubblewrap, and inside it an orphan is re-parented
 * to the namespace's pid 1 (bubblewrap's own init), a descendant of the leader still. A process
 * that left the group (setsid, setpgid) is no member: its pgid is read, and it is not signalled,
 * as a signal to the group would not reach it. The scan of every /proc/<pid>/stat (groupMembers)
 * cost ~20% of the worker's CPU in bulk cleanups, for every sandboxed stop; it remains only for a
 * tree that cannot be read or holds nothing to signal.
 */
async function askGroupToStop(pgid: number): Promise<void> {
  const tree = descendantsOf(pgid);
  if (tree) {
    const sandboxed = await Promise.all(tree.map(isBubblewrap));
    if (!sandboxed.some(Boolean)) {
      signalGroup(pgid, 'SIGTERM');
      return;
    }
    // The leader (the agent's shim) ignores SIGTERM: with no other member to signal, the sandbox
    // has not started its agent yet (or it has ended), and the scan decides, as before.
    if (termEach(tree.filter((pid, i) => !sandboxed[i] && pid !== pgid && procStatSync(pid)?.pgid === pgid)) > 0)
      return;
  }
  const signalled = await groupMembers(pgid).then(
    async (members) => {
      const sandboxed = await Promise.all(members.map(isBubblewrap));
      return termEach(members.filter((_, i) => !sandboxed[i]));
    },
    () => 0,
  );
  if (signalled === 0) signalGroup(pgid, 'SIGTERM');
}

/** SIGTERM to each of these processes (none of them a bubblewrap); how many were signalled. */
function termEach(pids: number[]): number {
  let signalled = 0;
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGTERM');
      signalled++;
    } catch {
      // already gone
    }
  }
  return signalled;
}

const isBubblewrap = async (pid: number): Promise<boolean> =>
  path.basename(await readlink(`/proc/${pid}/exe`).catch(() => '')) === 'bwrap';

/** A process and its descendants, from /proc/<pid>/task/<tid>/children; null when a list cannot be read. */
function descendantsOf(root: number): number[] | null {
  const found: number[] = [];
  const queue = [root];
  try {
    while (queue.length > 0) {
      const pid = queue.shift()!;
      found.push(pid);
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'latin1').split(' '))
          if (child) queue.push(Number(child));
      }
    }
  } catch {
    // A process that ended while it was read, or no children lists here: the scan decides.
    return null;
  }
  return found;
}

/** How many /proc entries one synchronous slice of a scan reads before it yields to the event loop. */
const PROC_SCAN_SLICE = 128;

let nextScan: Promise<Map<number, number[]>> | null = null;

/**
 * The pids of a process group, read from every /proc/<pid>/stat. Read synchronously in slices:
 * a host with a fleet's agents has a thousand processes, and one asynchronous read per process
 * cost about five times the CPU (measured: ~140 ms against ~25 ms for 680 processes), which every
 * stop paid. Each slice yields, so the event loop is never held for long. Stops that ask while
 * no scan has begun share the next one (a bulk cleanup stops many tasks' agents at once): it
 * begins after they asked, so it sees every process they mean.
 */
async function groupMembers(pgid: number): Promise<number[]> {
  nextScan ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
    nextScan = null;
    return scanGroups();
  });
  return (await nextScan).get(pgid) ?? [];
}

async function scanGroups(): Promise<Map<number, number[]>> {
  const groups = new Map<number, number[]>();
  const names = readdirSync('/proc');
  for (let i = 0; i < names.length; i += PROC_SCAN_SLICE) {
    if (i > 0) await new Promise((resolve) => setImmediate(resolve));
    for (const name of names.slice(i, i + PROC_SCAN_SLICE)) {
      if (!/^\d+$/.test(name)) continue;
      const stat = procStatSync(Number(name));
      if (!stat) continue;
      const members = groups.get(stat.pgid);
      if (members) members.push(Number(name));
      else groups.set(stat.pgid, [Number(name)]);
    }
  }
  return groups;
}

/**
 * Stops an agent's process group: SIGTERM, then SIGKILL after the grace period, signalled only
 * while pid and start time still name the same process. True when it is gone afterwards.
 */
export async function stopProcessGroup(pid: number, startTime: string, graceMs: number): Promise<boolean> {
  if (!(await isSameProcess(pid, startTime))) return true;
  await askGroupToStop(pid);
  const deadline = Date.now() + graceMs;
  // Most agents end within milliseconds of the signal: checked soon, then less often.
  for (let wait = 5; Date.now() < deadline && (await isSameProcess(pid, startTime)); wait = Math.min(wait * 2, 50))
    await new Promise((r) => setTimeout(r, wait));
  if (await isSameProcess(pid, startTime)) {
    signalGroup(pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 100));
  }
  return !(await isSameProcess(pid, startTime));
}

/** Stops whatever still runs under this execution id's mark (an unrecorded spawn). True when nothing marked is left. */
export async function stopMarkedGroup(executionId: string, graceMs: number): Promise<boolean> {
  const group = await findMarkedGroup(executionId);
  if (!group) return true;
  if (group.leader) await stopProcessGroup(group.leader.pid, group.leader.startTime, graceMs);
  // Members left behind by a leader that is gone: the mark proves they are this agent's.
  const rest = await findMarkedGroup(executionId);
  if (rest) signalGroup(rest.pgid, 'SIGKILL');
  for (let i = 0; i < 20 && (await findMarkedGroup(executionId)); i++) await new Promise((r) => setTimeout(r, 50));
  return (await findMarkedGroup(executionId)) === null;
}
