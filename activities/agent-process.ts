/**
 * Agent starts and stops, on whichever executor holds them (executors/): one agent per session,
 * and a start that was intended but never recorded stopped by its mark.
 */
import { findExecution, lockSessionForStart, type ExecutionRow, type ExecutionStatus } from '../db/executions';
import type { Db } from '../db/pool';
import { dropSpawnIntent, spawnIntentExists } from '../db/spawn-intents';
import type { StartAgentInput, StartedAgent } from '../executors/agent-start';
import { stopMarkedGroup } from '../executors/host/process-identity';
import { executorsOf } from '../executors/registry';
import type { ActivityDeps } from '../executors/support/deps';
import { typedFailure } from '../executors/support/failures';

export function agentProcessActivities(deps: ActivityDeps) {
  const { pool, config } = deps;
  const executors = executorsOf(deps);

  /** Stops an execution by its record; one whose start was never recorded is stopped by its mark. */
  async function stopAgent(executionId: string): Promise<ExecutionStatus> {
    const exec = await findExecution(pool, executionId);
    if (!exec) {
      if (await spawnIntentExists(pool, executionId)) {
        if (!(await stopMarkedGroup(executionId, config.agentStopGraceMs))) throw typedFailure('internal');
        await dropSpawnIntent(pool, executionId);
      }
      return 'stopped';
    }
    if (exec.status !== 'running') return exec.status;
    return executors.at({ sshTargetId: exec.ssh_target_id }).stopAgent(exec);
  }

  /**
   * In the transaction that records a start, under the session row's lock: another agent of the
   * session that runs is stopped first, as a resume after it would: two starts at once
   * end as one after the other, with one agent. One on a host this one cannot reach refuses.
   */
  async function oneAgentPerSession(client: Db, input: StartAgentInput): Promise<ExecutionRow | null> {
    for (const other of await lockSessionForStart(client, input.sessionId, input.executionId)) {
      if (!other.ssh_target_id && other.host_id !== config.hostId) throw typedFailure('session_running');
      await stopAgent(other.id);
    }
    // Under the session's start lock: this very start, recorded by another run of it meanwhile.
    return findExecution(client, input.executionId);
  }

  return {
    /**
     * `recordWithStart` (given by the launch step on this host, never through Temporal) writes rows
     * that must exist exactly when the agent started, and `afterRecord` what follows the recorded
     * start (the session's move), both in the transaction that records it (executors/executor.ts).
     */
    async startAgent(
      input: StartAgentInput,
      recordWithStart?: (client: Db) => Promise<void>,
      afterRecord?: (client: Db) => Promise<void>,
    ): Promise<StartedAgent> {
      return executors.at(input).startAgent(input, {
        beforeStart: (client) => oneAgentPerSession(client, input),
        recordWithStart,
        afterRecord,
      });
    },

    stopAgent,
  };
}
