/**
 * A container's processes as the kernel groups them: the control groups an agent entered into it
 * joins (so the container's limits hold it), and how many run in it besides its first.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { typedFailure } from '../support/failures';

/** A running container, as an agent start enters it. */
export interface RunningContainer {
  containerId: string;
  /** Its first process on the host: the namespaces an agent enters. */
  initPid: number;
  /** Its control groups' `cgroup.procs` files: an agent joins them, so the container's limits hold it too. */
  cgroupProcs: string[];
}

/**
 * A container's control groups, read from the kernel's view of its first process: every v1
 * hierarchy it is in (but systemd's name-only one) and the v2 one, where its folder exists.
 */
export function containerCgroupProcs(initPid: number): string[] {
  const procs: string[] = [];
  for (const line of readFileSync(`/proc/${initPid}/cgroup`, 'utf8').split('\n')) {
    const m = /^\d+:([^:]*):(\/.*)$/.exec(line);
    if (!m) continue;
    const [, controllers, group] = m as unknown as [string, string, string];
    if (controllers.startsWith('name=')) continue;
    const candidates =
      controllers === ''
        ? [path.join('/sys/fs/cgroup/unified', group), path.join('/sys/fs/cgroup', group)]
        : [path.join('/sys/fs/cgroup', controllers, group)];
    const found = candidates.find((dir) => existsSync(path.join(dir, 'cgroup.procs')));
    if (found) procs.push(path.join(found, 'cgroup.procs'));
  }
  if (procs.length === 0) throw typedFailure('internal', { reason: 'container_groups_unreadable' });
  return procs;
}

/** How many processes run in the container besides its first (agents, and what they started). */
export function processesInContainer(running: RunningContainer): number {
  const pids = new Set<string>();
  for (const file of running.cgroupProcs) {
    const text = (() => {
      try {
        return readFileSync(file, 'utf8');
      } catch {
        return null;
      }
    })();
    // A group that cannot be read: counted as in use (fail closed: nothing is removed on a doubt).
    if (text === null) return Number.POSITIVE_INFINITY;
    for (const pid of text.split('\n').filter(Boolean)) pids.add(pid);
  }
  pids.delete(String(running.initPid));
  return pids.size;
}
