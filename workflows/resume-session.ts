/**
 * resume/<sessionId>/<run>: a launch of an existing session. The same admission table, the same
 * read-only validation and the same transitions as a launch [R1, R2.1]; only the session id and
 * its run differ. Its previous agent stops before the new one starts; co-residency is observed
 * with site `resume`.
 */
import { CancellationScope, deprecatePatch, workflowInfo } from '@temporalio/workflow';
import type { LaunchResult } from '../domain/launch';
import { recordSteps, startedOnOf } from './activity-proxies';
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
  // Deprecated (docs/operating.md, "Upgrades and workflow versions"): every resume runs admitted; a run from
  // before that lived minutes and cannot be open any more.
  deprecatePatch('resume-admitted-as-launch');
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
