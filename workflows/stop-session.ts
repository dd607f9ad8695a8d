/** stop/<sessionId>/<n>: stop a session's agent process on its host; files, worktrees and branches are never touched. */
import { hostSteps, recordSteps } from './activity-proxies';

const records = recordSteps();

export async function stopSession(sessionId: string): Promise<void> {
  for (const exec of await records.runningExecutions(sessionId))
    await hostSteps(exec.hostId).stopAgent(exec.executionId);
  await records.markSessionStopped(sessionId);
}
