/**
 * Every process of an agent's control group held at once (SIGSTOP), or ended (SIGKILL): those
 * that left its process group (setsid) too, since the group holds whatever the agent started. The
 * free-space guard freezes a writer before its stop (which takes a few database writes), so that
 * it writes nothing more meanwhile, and kills what the stop of its process group left.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { cgroupHierarchies, executionGroup } from '../../domain/limits';
import type { CgroupLayout } from './agent-limits';

/** A fork between two reads joins the group: read again until a round finds no process not yet signalled. */
const MAX_ROUNDS = 8;

/** Signals every process of the execution's group; how many were signalled (0: no group, or empty). */
export async function signalAgentGroup(
  layout: CgroupLayout,
  owner: { environmentTaskId: string; executionId: string },
  signal: 'SIGSTOP' | 'SIGKILL',
): Promise<number> {
  const group = executionGroup(layout.parent, owner.environmentTaskId, owner.executionId);
  const procs = path.join(layout.mounts[cgroupHierarchies(layout.version)[0]!]!, group, 'cgroup.procs');
  const signalled = new Set<number>();
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const text = await readFile(procs, 'utf8').catch(() => '');
    const fresh = text
      .split('\n')
      .map(Number)
      .filter((pid) => pid > 0 && !signalled.has(pid));
    if (fresh.length === 0) break;
    for (const pid of fresh) {
      signalled.add(pid);
      try {
        process.kill(pid, signal);
      } catch {
        // ended meanwhile
      }
    }
  }
  return signalled.size;
}
