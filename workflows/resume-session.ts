/**
 * resume/<sessionId>/<n>: re-validate the canonical workspace and restart the session's agent in
 * exactly that path [R2.1]; co-residency is observed with site `resume`.
 */
import { uuid4 } from '@temporalio/workflow';
import type { LaunchResult } from '../domain/launch';
import { hostSteps, recordSteps, startedOnOf } from './activity-proxies';
import { setPhase } from './phase';
import { asTypedFailure } from './typed-failure';

const records = recordSteps();

export async function resumeSession(input: {
  sessionId: string;
  hostId: string;
  sharedQueue?: string;
  /** This run's own additions: args after the session's command, env over the session's, a prompt. */
  args?: string[];
  env?: Record<string, string>;
  prompt?: string | null;
}): Promise<LaunchResult> {
  const startedOn = startedOnOf(input);
  try {
    const { plan, command, env, legacyFallback, runningExecutions } = await records.planResume({ sessionId: input.sessionId, hostId: input.hostId });
    const host = hostSteps(plan.hostId, startedOn);
    const executionId = uuid4();
    // The previous process goes first: one agent per session. Not this resume's own: a re-run
    // after a worker died finds the agent it started already running, and keeps it.
    for (const exec of runningExecutions.filter((e) => e.executionId !== executionId)) await hostSteps(exec.hostId, startedOn).stopAgent(exec.executionId);
    const agent = await host.launchAgent({
      plan,
      command: [...command, ...(input.args ?? [])],
      env: { ...(env ?? {}), ...(input.env ?? {}) },
      prompt: input.prompt ?? null,
      executionId,
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
