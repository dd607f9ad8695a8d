/**
 * The control groups that hold an agent to its limits. Each task has a group (the
 * operator's maximum: all its agents together) and each execution one inside it (the launch's own
 * limits); the agent's supervisor puts the agent in it before the agent runs (native/agent-supervisor.c,
 * TWS_CGROUP_PROCS), so that the agent and everything it starts are counted from their first
 * instruction. cgroup v1 (memory, pids and cpu hierarchies) and v2 (the unified one) alike: what is
 * written is domain/limits.ts cgroupWrites.
 */
import { mkdir, readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  cgroupHierarchies,
  cgroupWrites,
  delegation,
  executionGroup,
  taskGroup,
  type AgentLimits,
  type CgroupVersion,
  type CgroupWrite,
  type LimitSettings,
} from '../../domain/limits';

/** Where this host's hierarchies are mounted, and the folder (in each) the service's groups go in. */
export interface CgroupLayout {
  version: CgroupVersion;
  /** Hierarchy name (`memory`, `pids`, `cpu`, or `unified`) → its mount point. */
  mounts: Record<string, string>;
  /** The service's folder in each hierarchy (TWS_CGROUP_PARENT, default `task-workspaces`). */
  parent: string;
}

/** The supervisor's variable naming the groups' `cgroup.procs` files (native/agent-supervisor.c). */
export const CGROUP_PROCS_VARIABLE = 'TWS_CGROUP_PROCS';
/** The supervisor's variable saying those groups are a shared place's (a container's): joined, never removed (native/agent-supervisor.c). */
export const CGROUP_SHARED_VARIABLE = 'TWS_CGROUP_SHARED';

const NO_LIMITS =
  'agents cannot be limited here: no cgroup v2 with the memory, pids and cpu controllers, nor cgroup v1 hierarchies of them that this process may write (run as root, or set TWS_AGENT_LIMITS=off to run agents without limits)';

/**
 * The refusal where limits cannot be enforced: as another user than root, said as such (the
 * agents' groups are made at the top of each hierarchy, which is root's; a cgroup v2 subtree
 * delegated to a user is not looked for).
 */
export function limitsRefusal(serviceUid: number): string {
  if (serviceUid === 0) return NO_LIMITS;
  return `agents cannot be limited here: this service runs as uid ${serviceUid}, not root, and the control groups here (memory, pids, cpu) are root's: it cannot make its agents' groups in them; start it as root, or set TWS_AGENT_LIMITS=off to run agents without limits`;
}

/** The hierarchies from /proc/self/mountinfo: v2 when the unified one has the three controllers, else v1. */
async function findLayout(parent: string): Promise<CgroupLayout | null> {
  const mountinfo = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const v1: Record<string, string> = {};
  let unified: string | null = null;
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!before || !after) continue;
    const mountPoint = before.split(' ')[4]!;
    const [type, , superOptions] = after.split(' ');
    if (type === 'cgroup2' && unified === null) unified = mountPoint;
    if (type !== 'cgroup') continue;
    for (const option of (superOptions ?? '').split(','))
      if ((option === 'memory' || option === 'pids' || option === 'cpu') && !v1[option]) v1[option] = mountPoint;
  }
  if (unified) {
    const controllers = await readFile(path.join(unified, 'cgroup.controllers'), 'utf8').catch(() => '');
    const have = controllers.trim().split(/\s+/);
    if (['memory', 'pids', 'cpu'].every((c) => have.includes(c))) return { version: 2, mounts: { unified }, parent };
  }
  if (v1.memory && v1.pids && v1.cpu) return { version: 1, mounts: v1, parent };
  return null;
}

/** By parent folder: one per process in a service; a test process runs several instances, each its own. */
const probed = new Map<string, Promise<CgroupLayout | null>>();

/**
 * This host's control groups for agents, found once per process and tried (the service's folder
 * made in each hierarchy); null when the operator turned limits off. Throws, in one line, where
 * limits are on and cannot be enforced: start-up refuses then, as it does without a sandbox.
 */
export async function agentLimitsLayout(settings: LimitSettings): Promise<CgroupLayout | null> {
  if (!settings.enabled) return null;
  const parent = settings.cgroupParent;
  if (!probed.has(parent)) probed.set(parent, probeLayout(parent));
  const layout = await probed.get(parent)!;
  if (!layout) throw new Error(limitsRefusal(process.getuid?.() ?? 0));
  return layout;
}

/** The layout under `parent`, its folder made in each hierarchy; null where it cannot be had. */
async function probeLayout(parent: string): Promise<CgroupLayout | null> {
  const layout = await findLayout(parent);
  if (!layout) return null;
  try {
    for (const hierarchy of cgroupHierarchies(layout.version))
      await mkdir(path.join(layout.mounts[hierarchy]!, layout.parent), { recursive: true });
    // v2: each folder on the way (an instance's parent is nested: task-workspaces/<instance>) lets its children use the controllers.
    if (layout.version === 2) {
      const parts = layout.parent.split('/');
      for (let i = 1; i <= parts.length; i++) await writeAll(layout, [delegation(parts.slice(0, i).join('/'))]);
    }
    return layout;
  } catch {
    return null;
  }
}

async function writeAll(layout: CgroupLayout, writes: CgroupWrite[]): Promise<void> {
  // Each controller's files in their order, the controllers side by side (an attach waits for one
  // round per controller's files, not one per file). Never two files of a controller at once: v1's
  // `cpu.cfs_period_us` is written with the quota it read a moment before, so a quota written
  // meanwhile was lost (2 groups of 300 ran with no CPU bound).
  const byController = new Map<string, CgroupWrite[]>();
  for (const w of writes) {
    const controller = `${w.hierarchy}/${w.group}/${w.file.split('.')[0]}`;
    byController.set(controller, [...(byController.get(controller) ?? []), w]);
  }
  await Promise.all(
    [...byController.values()].map(async (inOrder) => {
      for (const w of inOrder) await writeFile(path.join(layout.mounts[w.hierarchy]!, w.group, w.file), w.value);
    }),
  );
}

/** v1 hosts that count swap in the memory controller: the same bound for memory and swap together. */
async function swapBound(layout: CgroupLayout, group: string, limits: AgentLimits): Promise<void> {
  if (layout.version !== 1) return;
  const file = path.join(layout.mounts.memory!, group, 'memory.memsw.limit_in_bytes');
  // Absent where the kernel does not account swap: nothing to bound.
  await writeFile(file, String(limits.memoryBytes)).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

/** The group made in each hierarchy (side by side): true when this call made it, false when it was there. */
async function makeFolders(layout: CgroupLayout, group: string): Promise<boolean> {
  const made = await Promise.all(
    cgroupHierarchies(layout.version).map((hierarchy) =>
      mkdir(path.join(layout.mounts[hierarchy]!, group)).then(
        () => true,
        (err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
          return false;
        },
      ),
    ),
  );
  return made.some(Boolean);
}

/** A group's limits: memory with swap in their order, the rest beside them. */
async function writeLimits(layout: CgroupLayout, group: string, limits: AgentLimits): Promise<void> {
  const [memory, ...rest] = cgroupWrites(layout.version, group, limits);
  const memoryAndSwap = async () => {
    // v1 takes memory+swap only at or above memory: memory first when lowering, swap first when raising.
    await writeAll(layout, [memory!]).catch(async () => {
      await swapBound(layout, group, limits);
      await writeAll(layout, [memory!]);
    });
    await swapBound(layout, group, limits);
  };
  await Promise.all([memoryAndSwap(), writeAll(layout, rest)]);
}

/**
 * The execution's group, made with its limits inside its task's (the maximum), before its agent
 * starts. Answers the `cgroup.procs` files the supervisor writes the agent into.
 */
export async function prepareAgentGroup(
  layout: CgroupLayout,
  maximum: AgentLimits,
  owner: { environmentTaskId: string; executionId: string },
  limits: AgentLimits,
): Promise<string[]> {
  const task = taskGroup(layout.parent, owner.environmentTaskId);
  const execution = executionGroup(layout.parent, owner.environmentTaskId, owner.executionId);
  // The execution's group first: its task's is there while another of its agents runs (an attach).
  // Without it (a first start, or its last agent ended meanwhile) the task's group is made, with
  // the operator's maximum, and the execution's again; a task's group keeps what its maker wrote.
  for (let tries = 0; ; tries++) {
    try {
      await makeFolders(layout, execution);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || tries > 1) throw err;
      if (await makeFolders(layout, task)) {
        await writeLimits(layout, task, maximum);
        if (layout.version === 2) await writeAll(layout, [delegation(task)]);
      }
    }
  }
  await writeLimits(layout, execution, limits);
  return cgroupHierarchies(layout.version).map((h) => path.join(layout.mounts[h]!, execution, 'cgroup.procs'));
}

/** What a task's agents use now, together: bytes of memory and processes; null without a group (no agent runs). */
export async function taskUsage(
  layout: CgroupLayout,
  environmentTaskId: string,
): Promise<{ memoryBytes: number; pids: number } | null> {
  const group = taskGroup(layout.parent, environmentTaskId);
  const read = (hierarchy: string, file: string) =>
    readFile(path.join(layout.mounts[hierarchy]!, group, file), 'utf8').then(
      (text) => Number(text.trim()),
      () => null,
    );
  const v1 = layout.version === 1;
  const memoryBytes = await read(v1 ? 'memory' : 'unified', v1 ? 'memory.usage_in_bytes' : 'memory.current');
  const pids = await read(v1 ? 'pids' : 'unified', 'pids.current');
  if (memoryBytes === null || pids === null || !Number.isFinite(memoryBytes) || !Number.isFinite(pids)) return null;
  return { memoryBytes, pids };
}

/** The groups of one task (`task-<id>`) and of its executions (`exec-<id>`), as the first hierarchy holds them. */
async function groupsOf(folder: string, prefix: string): Promise<string[]> {
  return (await readdir(folder, { withFileTypes: true }).catch(() => []))
    .filter((e) => e.isDirectory() && e.name.startsWith(prefix))
    .map((e) => e.name);
}

/** Removes a group from every hierarchy; false where a process (or a child group) still holds it. */
async function removeGroup(layout: CgroupLayout, group: string): Promise<boolean> {
  let removed = true;
  for (const hierarchy of cgroupHierarchies(layout.version))
    await rmdir(path.join(layout.mounts[hierarchy]!, group)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') removed = false;
    });
  return removed;
}

/**
 * The groups its supervisor could not leave (it was killed first: a stop past its grace, a host
 * going down): an execution's group once it holds no process, and a task's once it holds no
 * execution's. Only groups older than `minAgeMs`: a start makes its group a moment before its agent
 * joins it. Called with the execution that just stopped (its own group at once) and by the
 * periodic limits check (every one); `taskIds` keeps to those tasks' groups. Answers how many groups went.
 */
export async function sweepAgentGroups(
  layout: CgroupLayout,
  opts: { executionId?: string; minAgeMs: number; taskIds?: Set<string> },
): Promise<number> {
  const root = path.join(layout.mounts[cgroupHierarchies(layout.version)[0]!]!, layout.parent);
  const ageOf = async (folder: string) => Date.now() - ((await stat(folder).catch(() => null))?.mtimeMs ?? Date.now());
  let removed = 0;
  for (const task of await groupsOf(root, 'task-')) {
    // Only these tasks' (the benchmark's own, at its end), when given.
    if (opts.taskIds && !opts.taskIds.has(task.slice('task-'.length))) continue;
    const execs = await groupsOf(path.join(root, task), 'exec-');
    // The stopped execution's own (whatever its age), else every old one.
    const mine = opts.executionId ? execs.includes(`exec-${opts.executionId}`) : false;
    if (opts.executionId && !mine) continue;
    for (const exec of execs) {
      if (opts.executionId && exec !== `exec-${opts.executionId}`) continue;
      const folder = path.join(root, task, exec);
      const procs = await readFile(path.join(folder, 'cgroup.procs'), 'utf8').catch(() => null);
      if (procs === null || procs.trim() !== '') continue;
      if (!mine && (await ageOf(folder)) < opts.minAgeMs) continue;
      if (await removeGroup(layout, `${layout.parent}/${task}/${exec}`)) removed++;
    }
    const folder = path.join(root, task);
    if ((await groupsOf(folder, 'exec-')).length > 0) continue;
    if (!mine && (await ageOf(folder)) < opts.minAgeMs) continue;
    if (await removeGroup(layout, `${layout.parent}/${task}`)) removed++;
  }
  return removed;
}
