/**
 * resume/<sessionId>/<n>: re-validate the canonical workspace and restart the session's agent in
 * exactly that path [R2.1]; co-residency is observed with site `resume`.
 */
import { uuid4 } from '@temporalio/workflow';
import { agentStartOf, type LaunchResult } from '../domain/launch';
import { hostSteps, recordSteps } from './activity-proxies';
import { setPhase } from './phase';
import { asTypedFailure } from './typed-failure';

const records = recordSteps();

export async function resumeSession(input: { sessionId: string; hostId: string }): Promise<LaunchResult> {
  try {
    setPhase('validating');
    const { plan, command, legacyFallback, runningExecutions } = await records.planResume(input);
    const host = hostSteps(plan.hostId);
    // The previous process goes first: one agent per session.
    for (const exec of runningExecutions) await hostSteps(exec.hostId).stopAgent(exec.executionId);
    if (!legacyFallback) await host.validateWorkspace(plan);
    await records.observeCoresidency({ sessionId: plan.sessionId, taskId: plan.taskId, site: 'resume' });
    setPhase('starting_agent');
    const agent = await host.startAgent(agentStartOf(plan, command, uuid4()));
    await records.markSessionRunning(plan.sessionId, ['starting', 'running', 'stopped', 'exited', 'failed']);
    setPhase('running');
    return { sessionId: plan.sessionId, taskEnvironmentId: plan.environmentId, role: plan.role, state: agent.status === 'running' ? 'running' : 'exited', executionId: agent.executionId };
  } catch (err) {
    setPhase('failed');
    throw asTypedFailure(err);
  }
}
