/**
 * launch/<sessionId>: admit → validate (attach) or materialize → publish inventory + ready →
 * start the agent on the workspace's host → mark running. On failure it undoes exactly what
 * this launch made and fails with the typed code.
 */
import { uuid4 } from '@temporalio/workflow';
import { type LaunchPlan, type LaunchRequest, type LaunchResult, type MaterializedSlot } from '../domain/launch';
import type { LaunchAgentInput } from '../activities/launch-agent';
import { hostSteps, recordSteps, startedOnOf } from './activity-proxies';
import { setPhase } from './phase';
import { asTypedFailure } from './typed-failure';

const records = recordSteps();

const phase = setPhase;

export async function launchSession(req: LaunchRequest): Promise<LaunchResult> {
  // 1. Admission: one transaction elects, attaches or refuses [R1].
  let plan: LaunchPlan;
  try {
    plan = await records.admitLaunch(req);
  } catch (err) {
    phase('refused');
    throw asTypedFailure(err);
  }

  const startedOn = startedOnOf(req);
  const host = hostSteps(plan.hostId, startedOn);
  let made: MaterializedSlot[] = [];
  // Named before it starts, so compensation can stop exactly this process whatever failed.
  const executionId = uuid4();
  let agentRequested = false;
  // A transition marks the session running only after the rebind.
  const agentInput = (validate: boolean): LaunchAgentInput => ({ plan, command: req.command, env: req.env ?? {}, prompt: req.prompt ?? null, executionId, site: 'launch', validate, markRunningFrom: plan.role === 'transitioned' ? null : ['starting'] });
  const running = (agent: { status: string; executionId: string }): LaunchResult => {
    phase('running');
    return { sessionId: plan.sessionId, taskEnvironmentId: plan.environmentId, role: plan.role, state: agent.status === 'running' ? 'running' : 'exited', executionId: agent.executionId };
  };
  try {
    let validate = false;
    if (plan.role === 'materialized') {
      // 2a. On the host in one step: materialize, publish the complete inventory and `ready` at
      // once, then what step 3 does. It undoes what it made itself if it fails.
      phase('materializing');
      agentRequested = true;
      const agent = await host.materializeAndLaunch(agentInput(plan.executorType === 'local'));
      return running(agent);
    } else if (plan.role === 'transitioned') {
      // 2c. Executor transition: the target workspace is validated (local) or created (worktree)
      // afresh; nothing of the old executor's is used [R3.1-R3.3].
      phase('transitioning');
      if (plan.executorType === 'local') validate = true;
      else made = await host.materializeWorkspace(plan);
    } else {
      // 2b. Attach is read-only validation of the canonical workspace [R1.2].
      validate = true;
    }

    // 3. On the host in one step: validation (attach, local target), co-residency recorded before
    // the process starts [R5], the agent with its own execution identity [R1.3], session running.
    agentRequested = true;
    const agent = await host.launchAgent(agentInput(validate));
    if (plan.role === 'transitioned') {
      // The environment changes executor only now that the target launch succeeded [R3].
      await records.rebindEnvironment(plan, made);
      await records.markSessionRunning(plan.sessionId);
    }
    return running(agent);
  } catch (err) {
    if (agentRequested) await host.stopAgent(executionId);
    if (plan.role === 'materialized') {
      await host.discardMaterialization(plan, made);
      await records.recordMaterializationFailed(plan, asTypedFailure(err).type ?? 'internal');
    } else {
      // Attach and transition leave the canonical environment as it was [R3.4].
      if (made.length > 0) await host.discardMaterialization(plan, made);
      await records.settleRefusedSession(plan.sessionId);
    }
    phase('failed');
    throw asTypedFailure(err);
  }
}
