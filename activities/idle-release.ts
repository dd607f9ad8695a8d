/** The record step of idle release [R6.9]: which environments of a host are released now, and which idle ones are kept and why. */
import { prepareCleanup } from '../db/cleanup-prepare';
import { idleCandidates } from '../db/idle';
import { inTransaction } from '../db/pool';
import { decideIdle, type IdleKeptReason } from '../domain/idle';
import { inLanes } from '../domain/lanes';
import type { ActivityDeps } from '../executors/support/deps';
import { withHeartbeat } from '../executors/support/heartbeat';
import type { CascadeMember } from './cleanup-records-bulk';

/** How many releases are prepared at once (each its own transaction). */
const PREPARE_LANES = 4;

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

    /**
     * Each judged environment's release prepared as any cleanup is (db/cleanup-prepare.ts: the
     * task's lock, the second look at its idleness, the job reserved with its snapshot), one
     * transaction a task, so one refused (used again since the judgement, another cleanup on it)
     * leaves the others prepared. Idempotent by operation id: a re-run finds the jobs it made.
     * The prepared ones, in order; a refused one is neither released nor kept by this run.
     */
    async prepareIdleReleases(input: { idleCutoff: string; releases: CascadeMember[] }): Promise<CascadeMember[]> {
      return withHeartbeat('prepare-idle-releases', async () => {
        // A few side by side: each locks only its own task's rows.
        const outcomes = await inLanes(input.releases, PREPARE_LANES, (m) =>
          inTransaction(pool, (client) =>
            prepareCleanup(client, {
              operationId: m.operationId,
              taskId: m.taskId,
              trigger: 'idle_release',
              workflowId: m.workflowId,
              discardChanges: false,
              idleCutoff: input.idleCutoff,
            }),
          ),
        );
        // A release keeps its task (it takes nothing away): it never ends a borrow, so it has no follow-up.
        return input.releases.filter((_, i) => outcomes[i]!.kind === 'prepared');
      });
    },
  };
}
