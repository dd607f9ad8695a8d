/**
 * resume/<sessionId>/<run>: a launch of an existing session. The same admission table, the same
 * read-only validation and the same transitions as a launch [R1, R2.1]; only the session id and
 * its run differ. Its previous agent stops before the new one starts; co-residency is observed
 * with site `resume`.
 */
import { CancellationScope, patched, proxyLocalActivities, uuid4, workflowInfo } from '@temporalio/workflow';
import type { LaunchPlan, LaunchResult } from '../domain/launch';
import { hostSteps, recordSteps, startedOnOf } from './activity-proxies';
import { carryOut, watchCancellation } from './launch-session';
import { setPhase } from './phase';
import { asTypedFailure } from './typed-failure';

const records = recordSteps();

export interface ResumeInput {
  sessionId: string;
  hostId: string;
  sharedQueue?: string;
  /** The run's own id (the last segment of its workflow id). Absent in runs started before resumes were admitted. */
  runId?: string;
  /** This run's own additions: args after the session's command, env over the session's, a prompt. */
  args?: string[];
  env?: Record<string, string>;
  prompt?: string | null;
}

export async function resumeSession(input: ResumeInput): Promise<LaunchResult> {
  // A run recorded before resumes were admitted replays the steps it took then.
  if (input.runId === undefined && !patched('resume-admitted-as-launch')) return resumeRecordedBeforeAdmission(input);
  const cancellation = watchCancellation();
  const runId = input.runId ?? workflowInfo().workflowId.split('/').pop()!;
  let admitted: Awaited<ReturnType<typeof records.admitResume>>;
  try {
    admitted = await CancellationScope.nonCancellable(() =>
      records.admitResume({ sessionId: input.sessionId, runId, hostId: input.hostId }),
    );
  } catch (err) {
    setPhase('refused');
    throw asTypedFailure(err);
  }
  const { plan, session } = admitted;
  return carryOut(
    plan,
    startedOnOf(input),
    {
      command: [...session.command, ...(input.args ?? [])],
      env: { ...session.env, ...(input.env ?? {}) },
      prompt: input.prompt ?? null,
      site: 'resume',
      startFrom: ['starting', 'running', 'stopped', 'exited', 'failed'],
      resume: { runId, stopFirst: session.runningExecutions },
    },
    cancellation,
  );
}

/** The steps of a resume planned without admission, kept only so that its recorded runs replay. */
interface RecordedPlanResume {
  planResume(input: { sessionId: string; hostId: string }): Promise<{
    plan: LaunchPlan;
    command: string[];
    env: Record<string, string>;
    legacyFallback: boolean;
    runningExecutions: { executionId: string; hostId: string }[];
  }>;
}

async function resumeRecordedBeforeAdmission(input: ResumeInput): Promise<LaunchResult> {
  const startedOn = startedOnOf(input);
  try {
    const { plan, command, env, runningExecutions } = await proxyLocalActivities<RecordedPlanResume>({
      startToCloseTimeout: '30 seconds',
    }).planResume({ sessionId: input.sessionId, hostId: input.hostId });
    const host = hostSteps(plan.hostId, startedOn);
    const executionId = uuid4();
    for (const exec of runningExecutions.filter((e) => e.executionId !== executionId))
      await hostSteps(exec.hostId, startedOn).stopAgent(exec.executionId);
    const agent = await host.launchAgent({
      plan,
      command: [...command, ...(input.args ?? [])],
      env: { ...(env ?? {}), ...(input.env ?? {}) },
      prompt: input.prompt ?? null,
      executionId,
      site: 'resume',
      // Never the unvalidated source-checkout fallback of that time: validated, or refused.
      validate: true,
      markRunningFrom: ['starting', 'running', 'stopped', 'exited', 'failed'],
    });
    setPhase('running');
    return {
      sessionId: plan.sessionId,
      taskEnvironmentId: plan.environmentId,
      role: plan.role,
      state: agent.status === 'running' ? 'running' : 'exited',
      executionId: agent.executionId,
    };
  } catch (err) {
    setPhase('failed');
    throw asTypedFailure(err);
  }
}
