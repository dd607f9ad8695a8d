/**
 * What one agent may use: its memory (its sandbox's /tmp counted), its processes and its
 * CPUs, from the operator's defaults, a profile's own and a launch's, never past the operator's
 * maximum; the maximum also bounds all the agents of one task together. Pure: the control groups
 * that enforce them are executors/host/agent-limits.ts's, what they write is cgroupWrites below.
 */
import { parseByteSize } from './disk';

export interface AgentLimits {
  /** Bytes of memory, the sandbox's /tmp included. */
  memoryBytes: number;
  /** Processes and threads at once. */
  pids: number;
  /** CPUs' worth of time (a quota: 1.5 is one and a half CPUs). */
  cpus: number;
}

/** What a launch (or a profile) may ask for: any of the three. */
export type LimitsRequest = Partial<AgentLimits>;

export interface LimitSettings {
  /** Whether agents run in control groups of their own (TWS_AGENT_LIMITS: on by default, `off` by the operator's choice). */
  enabled: boolean;
  defaults: AgentLimits;
  /** A launch may ask up to these; every agent of a task together stays within them too. */
  maximum: AgentLimits;
  /** The sandbox's /tmp at most (TWS_AGENT_TMP), counted in the agent's memory. */
  tmpBytes: number;
  /** The folder, in each control group hierarchy, the agents' groups go in (TWS_CGROUP_PARENT). */
  cgroupParent: string;
}

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;
const LIMIT_NAMES = ['memoryBytes', 'pids', 'cpus'] as const;

/**
 * The least each limit can be enforced at, by every executor. Memory: the container engines'
 * floor (Docker's and Podman's 6 MiB; runc cannot start a container under what its own start
 * uses, about 2.5 MiB, so a smaller one failed as if the engine were down), and nothing on the
 * host runs in less (the sandbox and the agent's first exec). CPUs: a CFS quota of 1 ms per
 * 100 ms period, the kernel's and the engines' floor (the host's groups raised a smaller one
 * without a word). Processes: one, the agent.
 */
export const LIMIT_MINIMUM: Readonly<AgentLimits> = { memoryBytes: 6 * MIB, pids: 1, cpus: 0.01 };

function positive(name: string, raw: string | undefined, byDefault: number, parse: (text: string) => number): number {
  if (raw === undefined || raw.trim() === '') return byDefault;
  let value: number;
  try {
    value = parse(raw.trim());
  } catch {
    value = NaN;
  }
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
}

/** A setting of one limit: positive, and no less than that limit's minimum. */
function limitSetting(
  limit: keyof AgentLimits,
  name: string,
  raw: string | undefined,
  byDefault: number,
  parse: (text: string) => number,
): number {
  const value = positive(name, raw, byDefault, parse);
  if (value < LIMIT_MINIMUM[limit]) throw new Error(`${name} must be at least ${LIMIT_MINIMUM[limit]}`);
  return value;
}

const bytes = (text: string) => parseByteSize(text);
const integer = (text: string) => (/^[0-9]+$/.test(text) ? Number(text) : NaN);
const cpus = (text: string) => (/^[0-9]+(\.[0-9]+)?$/.test(text) ? Number(text) : NaN);

/** The operator's settings from the environment; `hostCpus` is what this machine has. */
export function parseLimitSettings(env: Record<string, string | undefined>, hostCpus: number): LimitSettings {
  const mode = env.TWS_AGENT_LIMITS || 'on';
  if (mode !== 'on' && mode !== 'off') throw new Error('TWS_AGENT_LIMITS must be on or off');
  const defaults: AgentLimits = {
    memoryBytes: limitSetting('memoryBytes', 'TWS_AGENT_MEMORY', env.TWS_AGENT_MEMORY, 4 * GIB, bytes),
    pids: limitSetting('pids', 'TWS_AGENT_PIDS', env.TWS_AGENT_PIDS, 1024, integer),
    cpus: limitSetting('cpus', 'TWS_AGENT_CPUS', env.TWS_AGENT_CPUS, Math.min(2, hostCpus), cpus),
  };
  const maximum: AgentLimits = {
    memoryBytes: limitSetting(
      'memoryBytes',
      'TWS_AGENT_MEMORY_MAX',
      env.TWS_AGENT_MEMORY_MAX,
      Math.max(16 * GIB, defaults.memoryBytes),
      bytes,
    ),
    pids: limitSetting('pids', 'TWS_AGENT_PIDS_MAX', env.TWS_AGENT_PIDS_MAX, Math.max(4096, defaults.pids), integer),
    cpus: limitSetting('cpus', 'TWS_AGENT_CPUS_MAX', env.TWS_AGENT_CPUS_MAX, Math.max(hostCpus, defaults.cpus), cpus),
  };
  for (const name of LIMIT_NAMES)
    if (defaults[name] > maximum[name]) throw new Error(`the default ${name} is above its maximum`);
  const tmpBytes = positive('TWS_AGENT_TMP', env.TWS_AGENT_TMP, 512 * MIB, bytes);
  const cgroupParent = (env.TWS_CGROUP_PARENT || 'task-workspaces').replace(/^\/+|\/+$/g, '');
  if (cgroupParent === '' || cgroupParent.split('/').some((part) => part === '..' || part === '.' || part === ''))
    throw new Error('TWS_CGROUP_PARENT must be a folder below the control group hierarchies, without . or ..');
  return { enabled: mode === 'on', defaults, maximum, tmpBytes, cgroupParent };
}

/** A profile's `limits` (TWS_AGENT_PROFILES), checked against the maximum at start-up. */
export function parseProfileLimits(name: string, raw: unknown, maximum: AgentLimits): LimitsRequest {
  if (raw === undefined) return {};
  const problem = limitsProblem(raw);
  if (problem) throw new Error(`TWS_AGENT_PROFILES.${name}.limits: ${problem}`);
  const over = overMaximum(raw as LimitsRequest, maximum);
  if (over) throw new Error(`TWS_AGENT_PROFILES.${name}.limits.${over} is above the maximum`);
  return raw as LimitsRequest;
}

/** Why `raw` is not a limits object (`{ memoryBytes?, pids?, cpus? }`, each at least its minimum), or null. */
export function limitsProblem(raw: unknown): string | null {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'limits must be an object';
  for (const [key, value] of Object.entries(raw)) {
    if (!(LIMIT_NAMES as readonly string[]).includes(key)) return `${key} is not a limit (memoryBytes, pids, cpus)`;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return `${key} must be a positive number`;
    if (key !== 'cpus' && !Number.isInteger(value)) return `${key} must be a whole number`;
    const least = LIMIT_MINIMUM[key as keyof AgentLimits];
    if (value < least) return `${key} must be at least ${least}, the least an executor can enforce`;
  }
  return null;
}

/** The first limit of `request` above the maximum, or null. */
export function overMaximum(request: LimitsRequest, maximum: AgentLimits): keyof AgentLimits | null {
  for (const name of LIMIT_NAMES) if (request[name] !== undefined && request[name]! > maximum[name]) return name;
  return null;
}

/** What applies to a launch: the launch's own, else the profile's, else the defaults. */
export function resolveLimits(defaults: AgentLimits, profile: LimitsRequest, launch: LimitsRequest): AgentLimits {
  return {
    memoryBytes: launch.memoryBytes ?? profile.memoryBytes ?? defaults.memoryBytes,
    pids: launch.pids ?? profile.pids ?? defaults.pids,
    cpus: launch.cpus ?? profile.cpus ?? defaults.cpus,
  };
}

/** The stored counter of agents a limit ended, by outcome (`oom_killed`): tws_agents_ended_by_limit_total. */
export const AGENTS_ENDED_BY_LIMIT_TOTAL = 'tws_agents_ended_by_limit_total';

/** Control groups: v1 (one hierarchy per controller) or v2 (one unified hierarchy). */
export type CgroupVersion = 1 | 2;

/** One file of a control group and what goes in it, relative to the hierarchy's mount. */
export interface CgroupWrite {
  /** v1: the controller's hierarchy (`memory`, `pids`, `cpu`); v2: `unified`. */
  hierarchy: string;
  /** The group's folder under the hierarchy (`task-workspaces/<task>`). */
  group: string;
  file: string;
  value: string;
}

/** The CFS period: CPUs become a quota of it. */
const CPU_PERIOD_US = 100_000;

/** The hierarchies a version's groups live in. */
export const cgroupHierarchies = (version: CgroupVersion): string[] =>
  version === 1 ? ['memory', 'pids', 'cpu'] : ['unified'];

/**
 * What a group with these limits has written, in order. v1: `memory.limit_in_bytes` (swap too where
 * the host counts it, `memory.memsw.limit_in_bytes`, written by the caller when present),
 * `pids.max`, `cpu.cfs_period_us` and `cpu.cfs_quota_us`. v2: `memory.max` with `memory.swap.max`
 * 0, `pids.max` and `cpu.max`. A v2 parent first lets its children use the controllers
 * (`cgroup.subtree_control`).
 */
export function cgroupWrites(version: CgroupVersion, group: string, limits: AgentLimits): CgroupWrite[] {
  const quota = String(Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US)));
  if (version === 1)
    return [
      { hierarchy: 'memory', group, file: 'memory.limit_in_bytes', value: String(limits.memoryBytes) },
      { hierarchy: 'pids', group, file: 'pids.max', value: String(limits.pids) },
      { hierarchy: 'cpu', group, file: 'cpu.cfs_period_us', value: String(CPU_PERIOD_US) },
      { hierarchy: 'cpu', group, file: 'cpu.cfs_quota_us', value: quota },
    ];
  return [
    { hierarchy: 'unified', group, file: 'memory.max', value: String(limits.memoryBytes) },
    { hierarchy: 'unified', group, file: 'memory.swap.max', value: '0' },
    { hierarchy: 'unified', group, file: 'pids.max', value: String(limits.pids) },
    { hierarchy: 'unified', group, file: 'cpu.max', value: `${quota} ${CPU_PERIOD_US}` },
  ];
}

/** v2: what a parent group writes so that its children get the controllers. */
export const delegation = (group: string): CgroupWrite => ({
  hierarchy: 'unified',
  group,
  file: 'cgroup.subtree_control',
  value: '+memory +pids +cpu',
});

/** Where one task's agents' groups are, below the service's own folder of each hierarchy. */
export const taskGroup = (parent: string, environmentTaskId: string): string => `${parent}/task-${environmentTaskId}`;
export const executionGroup = (parent: string, environmentTaskId: string, executionId: string): string =>
  `${taskGroup(parent, environmentTaskId)}/exec-${executionId}`;
