/** stop/<sessionId>/<n>: stop a session's agent process on its host; files, worktrees and branches are never touched. */
import { patched } from '@temporalio/workflow';
import { hostSteps, recordSteps } from './activity-proxies';

const records = recordSteps();

/**
 * Rounds a stop comes back for agents started since it read them. Each round means a resume
 * recorded its agent meanwhile; after the last one the session is left as its agents say
 * (running, with the last resume's agent), which is one after the other too.
 */
const STOP_ROUNDS = 5;

export async function stopSession(sessionId: string): Promise<void> {
  let running = await records.runningExecutions(sessionId);
  if (!patched('stop-until-none-runs')) {
    for (const exec of running) await hostSteps(exec.hostId).stopAgent(exec.executionId);
    await records.markSessionStopped(sessionId);
    return;
  }
  // A resume sent with the stop may record its agent between the stop's read and its end: the
  // session is marked stopped only once none of its agents runs, in the transaction a start
  // records under, so a stop and a resume end as one after the other.
  for (let round = 1; ; round++) {
    for (const exec of running) await hostSteps(exec.hostId).stopAgent(exec.executionId);
    running = await records.markSessionStoppedUnlessRunning(sessionId);
    if (running.length === 0 || round === STOP_ROUNDS) return;
  }
}
