/**
 * The host side of a launch or resume in one task-queue round trip: validate the workspace
 * (attach, resume, local target), record co-residency before the process starts [R5], start
 * the agent, and mark the session running (unless a transition must rebind first). Each step is
 * the same function the smaller activities run; retried, it is idempotent (the execution id
 * names the process).
 */
import { moveSessionState, type SessionState } from '../db/sessions';
import type { CoresidencySite } from '../domain/coresidency';
import { agentStartOf, type LaunchPlan } from '../domain/launch';
import { agentProcessActivities, type StartedAgent } from './agent-process';
import { coresidencyActivities } from './coresidency';
import type { ActivityDeps } from './deps';
import { workspaceValidateActivities } from './workspace-validate';

export interface LaunchAgentInput {
  plan: LaunchPlan;
  command: string[];
  executionId: string;
  site: CoresidencySite;
  validate: boolean;
  /** Session states from which it becomes `running` once the agent started; null leaves that to the workflow. */
  markRunningFrom: SessionState[] | null;
}

export function launchAgentActivities(deps: ActivityDeps) {
  const { validateWorkspace } = workspaceValidateActivities(deps);
  const { observeCoresidency } = coresidencyActivities(deps);
  const { startAgent } = agentProcessActivities(deps);
  return {
    async launchAgent(input: LaunchAgentInput): Promise<StartedAgent> {
      const { plan } = input;
      if (input.validate) await validateWorkspace(plan);
      await observeCoresidency({ sessionId: plan.sessionId, taskId: plan.taskId, site: input.site });
      const agent = await startAgent(agentStartOf(plan, input.command, input.executionId));
      if (input.markRunningFrom) await moveSessionState(deps.pool, plan.sessionId, input.markRunningFrom, 'running');
      return agent;
    },
  };
}
