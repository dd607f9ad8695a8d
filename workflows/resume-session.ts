/**
 * resume/<sessionId>/<n>: re-validate the canonical workspace and restart the session's agent in
 * exactly that path [R2.1]; co-residency is observed with site `resume`.
 */
import { uuid4 } from '@temporalio/workflow';
import type { LaunchResult } from '../domain/launch';
import { hostSteps, recordSteps } from './activity-proxies';
import { setPhase } from './phase';
import { asTypedFailure } from './typed-failure';

const records = recordSteps();

export async function resumeSession(input: { sessionId: string; hostId: string }): Promise<LaunchResult> {
  try {
    const { plan, command, legacyFallback, runningExecutions } = await records.planResume(input);
    const host = hostSteps(plan.hostId);
    // The previous process goes first: one agent per session.
    for (const exec of runningExecutions) await hostSteps(exec.hostId).stopAgent(exec.executionId);
    const agent = await host.launchAgent({
      plan,
      command,
      executionId: uuid4(),
      site: 'resume',
      validate: !legacyFallback,
      markRunningFrom: ['starting', 'running', 'stopped', 'exited', 'failed'],
    });
    setPhase('running');
    return { sessionId: plan.sessionId, taskEnvironmentId: plan.environmentId, role: plan.role, state: agent.status === 'running' ? 'running' : 'exited', executionId: agent.executionId };
  } catch (err) {
    setPhase('failed');
    throw asTypedFailure(err);
  }
}
