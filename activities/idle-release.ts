/** The record step of idle release [R6.9]: which environments of a host are released now, and which idle ones are kept and why. */
import { idleCandidates } from '../db/idle';
import { decideIdle, type IdleKeptReason } from '../domain/idle';
import type { ActivityDeps } from '../executors/support/deps';

export function idleReleaseRecordActivities({ pool }: ActivityDeps) {
  return {
    /** `asOf` is the workflow's clock (deterministic), so a replay judges with the same cutoff. */
    async idleEnvironments(input: {
      hostId: string;
      idleForMs: number;
      asOf: string;
    }): Promise<{ release: string[]; kept: { taskId: string; reason: IdleKeptReason }[] }> {
      const cutoff = new Date(Date.parse(input.asOf) - input.idleForMs).toISOString();
      const release: string[] = [];
      const kept: { taskId: string; reason: IdleKeptReason }[] = [];
      for (const facts of await idleCandidates(pool, { hostId: input.hostId })) {
        const decision = decideIdle(facts, cutoff);
        if (decision.release) release.push(facts.ownerTaskId);
        else if (decision.reason !== 'recently_active')
          kept.push({ taskId: facts.ownerTaskId, reason: decision.reason });
      }
      return { release, kept };
    },
  };
}
