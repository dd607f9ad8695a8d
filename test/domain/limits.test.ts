/** The rules of agents' limits: settings, which limits apply, and what a control group gets written. */
import { mkdtempSync, mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseByteSize } from '../../domain/disk';
import {
  cgroupWrites,
  limitsProblem,
  overMaximum,
  parseLimitSettings,
  parseProfileLimits,
  resolveLimits,
} from '../../domain/limits';
import { prepareAgentGroup, type CgroupLayout } from '../../executors/host/agent-limits';

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

describe('settings', () => {
  it('has defaults within a maximum, read from TWS_AGENT_*', () => {
    const s = parseLimitSettings({}, 8);
    expect(s).toEqual({
      enabled: true,
      defaults: { memoryBytes: 4 * GIB, pids: 1024, cpus: 2 },
      maximum: { memoryBytes: 16 * GIB, pids: 4096, cpus: 8 },
      tmpBytes: 512 * MIB,
      cgroupParent: 'task-workspaces',
    });
    const set = parseLimitSettings(
      {
        TWS_AGENT_MEMORY: '1g',
        TWS_AGENT_PIDS: '100',
        TWS_AGENT_CPUS: '0.5',
        TWS_AGENT_MEMORY_MAX: '2GiB',
        TWS_AGENT_TMP: '64m',
        TWS_CGROUP_PARENT: '/agents/tws/',
      },
      1,
    );
    expect(set.defaults).toEqual({ memoryBytes: GIB, pids: 100, cpus: 0.5 });
    expect(set.maximum.memoryBytes).toBe(2 * GIB);
    expect(set.tmpBytes).toBe(64 * MIB);
    expect(set.cgroupParent).toBe('agents/tws');
    expect(parseLimitSettings({ TWS_AGENT_LIMITS: 'off' }, 2).enabled).toBe(false);
  });

  it('refuses what cannot be a limit, a default above its maximum, and a parent that climbs', () => {
    expect(() => parseLimitSettings({ TWS_AGENT_LIMITS: 'maybe' }, 2)).toThrow('TWS_AGENT_LIMITS');
    expect(() => parseLimitSettings({ TWS_AGENT_MEMORY: 'lots' }, 2)).toThrow('TWS_AGENT_MEMORY');
    expect(() => parseLimitSettings({ TWS_AGENT_PIDS: '1.5' }, 2)).toThrow('TWS_AGENT_PIDS');
    expect(() => parseLimitSettings({ TWS_AGENT_CPUS: '0' }, 2)).toThrow('TWS_AGENT_CPUS');
    expect(() => parseLimitSettings({ TWS_AGENT_PIDS: '100', TWS_AGENT_PIDS_MAX: '50' }, 2)).toThrow('maximum');
    expect(() => parseLimitSettings({ TWS_CGROUP_PARENT: '../escape' }, 2)).toThrow('TWS_CGROUP_PARENT');
    // Settings under what an executor can enforce are refused at start-up, not at each launch.
    expect(() => parseLimitSettings({ TWS_AGENT_MEMORY: '1m' }, 2)).toThrow(
      'TWS_AGENT_MEMORY must be at least 6291456',
    );
    expect(() => parseLimitSettings({ TWS_AGENT_CPUS: '0.005' }, 2)).toThrow('TWS_AGENT_CPUS must be at least 0.01');
    expect(parseByteSize('2GiB')).toBe(2 * GIB);
    expect(() => parseByteSize('2 parsecs')).toThrow();
  });

  it("checks a profile's limits against the maximum at start-up", () => {
    const maximum = { memoryBytes: GIB, pids: 100, cpus: 2 };
    expect(parseProfileLimits('p', undefined, maximum)).toEqual({});
    expect(parseProfileLimits('p', { pids: 50 }, maximum)).toEqual({ pids: 50 });
    expect(() => parseProfileLimits('p', { pids: 500 }, maximum)).toThrow('TWS_AGENT_PROFILES.p.limits.pids');
    expect(() => parseProfileLimits('p', { disk: 5 }, maximum)).toThrow('not a limit');
    expect(() => parseProfileLimits('p', { memoryBytes: 1 }, maximum)).toThrow(
      'TWS_AGENT_PROFILES.p.limits: memoryBytes',
    );
  });
});

describe('which limits apply', () => {
  const defaults = { memoryBytes: GIB, pids: 100, cpus: 1 };
  it("a launch's own, else its profile's, else the defaults, one by one", () => {
    expect(resolveLimits(defaults, {}, {})).toEqual(defaults);
    expect(resolveLimits(defaults, { pids: 50, cpus: 0.5 }, { cpus: 2 })).toEqual({
      memoryBytes: GIB,
      pids: 50,
      cpus: 2,
    });
  });
  it('names the first limit above the maximum', () => {
    expect(overMaximum({ memoryBytes: GIB }, defaults)).toBeNull();
    expect(overMaximum({ memoryBytes: GIB + 1 }, defaults)).toBe('memoryBytes');
    expect(overMaximum({ cpus: 1.5 }, defaults)).toBe('cpus');
  });
  it('says what is wrong with a limits object', () => {
    expect(limitsProblem({ pids: 3 })).toBeNull();
    expect(limitsProblem([])).toMatch(/object/);
    expect(limitsProblem({ pids: 0 })).toMatch(/positive/);
    expect(limitsProblem({ pids: 1.5 })).toMatch(/whole/);
    expect(limitsProblem({ cpus: 0.25 })).toBeNull();
    // Under what an executor can enforce (a container engine's 6 MiB, a 1 ms CFS quota).
    expect(limitsProblem({ memoryBytes: 1 })).toMatch(/memoryBytes must be at least 6291456/);
    expect(limitsProblem({ memoryBytes: 6 * MIB })).toBeNull();
    expect(limitsProblem({ cpus: 0.001 })).toMatch(/cpus must be at least 0.01/);
  });
});

describe('what a control group is written', () => {
  const limits = { memoryBytes: 512 * MIB, pids: 64, cpus: 1.5 };
  it('v1: memory, pids and a CFS quota in their own hierarchies', () => {
    expect(cgroupWrites(1, 'tws/task-a', limits)).toEqual([
      { hierarchy: 'memory', group: 'tws/task-a', file: 'memory.limit_in_bytes', value: String(512 * MIB) },
      { hierarchy: 'pids', group: 'tws/task-a', file: 'pids.max', value: '64' },
      { hierarchy: 'cpu', group: 'tws/task-a', file: 'cpu.cfs_period_us', value: '100000' },
      { hierarchy: 'cpu', group: 'tws/task-a', file: 'cpu.cfs_quota_us', value: '150000' },
    ]);
  });
  it('v2: memory.max without swap, pids.max and cpu.max in the unified hierarchy', () => {
    expect(cgroupWrites(2, 'tws/task-a', limits)).toEqual([
      { hierarchy: 'unified', group: 'tws/task-a', file: 'memory.max', value: String(512 * MIB) },
      { hierarchy: 'unified', group: 'tws/task-a', file: 'memory.swap.max', value: '0' },
      { hierarchy: 'unified', group: 'tws/task-a', file: 'pids.max', value: '64' },
      { hierarchy: 'unified', group: 'tws/task-a', file: 'cpu.max', value: '150000 100000' },
    ]);
  });
  it('v2 through the executor: the task group delegates the controllers and holds the maximum, the execution its own', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'tws-cgroup-v2-'));
    mkdirSync(path.join(root, 'tws'));
    const layout: CgroupLayout = { version: 2, mounts: { unified: root }, parent: 'tws' };
    const maximum = { memoryBytes: GIB, pids: 200, cpus: 2 };
    const procs = await prepareAgentGroup(layout, maximum, { environmentTaskId: 't1', executionId: 'e1' }, limits);
    expect(procs).toEqual([path.join(root, 'tws/task-t1/exec-e1/cgroup.procs')]);
    const read = (f: string) => readFileSync(path.join(root, f), 'utf8');
    expect(read('tws/task-t1/cgroup.subtree_control')).toBe('+memory +pids +cpu');
    expect(read('tws/task-t1/memory.max')).toBe(String(GIB));
    expect(read('tws/task-t1/pids.max')).toBe('200');
    expect(read('tws/task-t1/exec-e1/memory.max')).toBe(String(512 * MIB));
    expect(read('tws/task-t1/exec-e1/memory.swap.max')).toBe('0');
    expect(read('tws/task-t1/exec-e1/cpu.max')).toBe('150000 100000');
  });
});
