/**
 * The host side of a launch or resume in one task-queue round trip: validate the workspace
 * (attach, resume, local target), record co-residency before the process starts [R5], start
 * the agent, and mark the session running (unless a transition must rebind first). Each step is
 * the same function the smaller activities run; retried, it is idempotent (the execution id
 * names the process).
 */
import { markSessionStarted } from '../db/sessions';
import type { SessionState } from '../domain/session';
import type { CoresidencyObservation, CoresidencySite } from '../domain/coresidency';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { isErrorCode, type ErrorCode } from '../domain/errors';
import { agentStartOf, publishedPlan, type LaunchPlan, type MaterializedSlot } from '../domain/launch';
import { outageOf } from '../domain/outage';
import { isStranded } from '../domain/reconcile';
import { agentProcessActivities } from './agent-process';
import type { StartedAgent } from '../executors/agent-start';
import { coresidencySteps } from './coresidency';
import type { ActivityDeps } from '../executors/support/deps';
import { typedFailure } from '../executors/support/failures';
import { withHeartbeat } from '../executors/support/heartbeat';
import { giveNewWorkspace } from '../executors/host/agent-identity';
import { newWorkspaceUid } from '../executors/host/agent-uid';
import { launchRecordActivities } from './launch-records';
import { servedWorkflowId, workflowLiveness } from './workflow-liveness';
import { workspaceMaterializeActivities } from './workspace-materialize';
import { workspaceValidateActivities } from './workspace-validate';

export interface LaunchAgentInput {
  plan: LaunchPlan;
  command: string[];
  /** Absent in inputs recorded before variables existed. */
  env?: Record<string, string>;
  prompt?: string | null;
  executionId: string;
  site: CoresidencySite;
  validate: boolean;
  /** Session states from which it becomes `running` once the agent started; null leaves that to the workflow. */
  markRunningFrom: SessionState[] | null;
  /** A resume's run, counted when its agent started. */
  resumeRun?: string | null;
}

/** A resume's host step: its agent, or its validation's refusal (nothing was touched). */
export type ResumedOnHost =
  { agent: StartedAgent } | { refused: { type: ErrorCode; message: string; details: unknown[] } };

/** Whether this is the first try of the running activity (a local one's attempt counts too). */
const firstTry = () => Context.current().info.attempt <= 1;

export function launchAgentActivities(deps: ActivityDeps) {
  const { validateWorkspace } = workspaceValidateActivities(deps);
  const { readCoresidency, recordCoresidency, reportCoresidency } = coresidencySteps(deps);
  const { startAgent, stopAgent } = agentProcessActivities(deps);
  const { materializeWorkspace, discardMaterialization } = workspaceMaterializeActivities(deps);
  const { publishInventory, publishedBy, recordMaterializationFailed } = launchRecordActivities(deps);

  async function launchAgent(input: LaunchAgentInput): Promise<StartedAgent> {
    const { plan } = input;
    if (input.validate) await validateWorkspace(plan);
    // Observed once validated, before the start, and recorded in the start's own transaction
    // [R5.1]: a start that is refused (the command cannot start) leaves no observation, as it
    // leaves no session. The read (it never fails) goes on while the start prepares (its
    // recorded-execution check, its spawn intent, its barrier) and is awaited before the spawn.
    const coresidency = {
      sessionId: plan.sessionId,
      taskId: plan.taskId,
      environmentId: plan.environmentId,
      site: input.site,
    };
    const observed = readCoresidency(coresidency);
    let observation: CoresidencyObservation | null = null;
    let recorded = false;
    let markedWithStart = false;
    const agent = await startAgent(
      agentStartOf(plan, input.command, input.executionId, input.env ?? {}, input.prompt ?? null),
      async (client) => {
        observation = await observed;
        recorded = await recordCoresidency(client, coresidency, observation);
        // Said before the agent's process starts [R5.1] (a start refused after this is logged as such).
        if (recorded) reportCoresidency(coresidency, observation, input.executionId);
      },
      input.markRunningFrom
        ? async (client) => {
            // The session is running in the transaction that records its agent: one commit, and a
            // reader never sees the execution without the session's move.
            await markSessionStarted(client, plan.sessionId, input.markRunningFrom!, input.resumeRun ?? null);
            markedWithStart = true;
          }
        : undefined,
    );
    // Ended either way before this step ends (a start that found its agent recorded never used it).
    await observed;
    // A re-run that found its agent recorded already (no start transaction this time) marks it here.
    if (input.markRunningFrom && !markedWithStart)
      await markSessionStarted(deps.pool, plan.sessionId, input.markRunningFrom, input.resumeRun ?? null);
    return agent;
  }

  return {
    launchAgent,

    /**
     * A resume on its host in one step (its previous agents on this host): the workspace validated
     * first, a refusal answered as it is with nothing touched (the previous agent runs on); then the
     * previous agents stopped and the new one started, as the three separate steps did. A re-run of
     * the step (after an outage) may have stopped them already: its refusal is then thrown, so the
     * launch settles the session as for any failure after the stop.
     */
    async resumeAgent(input: LaunchAgentInput & { stopFirst: string[] }): Promise<ResumedOnHost> {
      const { stopFirst, ...launch } = input;
      try {
        await validateWorkspace(launch.plan);
      } catch (err) {
        if (err instanceof ApplicationFailure && isErrorCode(err.type) && err.nonRetryable && firstTry())
          return { refused: { type: err.type, message: err.message, details: (err.details ?? []) as unknown[] } };
        throw err;
      }
      // On another host's queue the stops' grace periods could outlast the heartbeat timeout.
      return withHeartbeat('resume', async () => {
        for (const executionId of stopFirst) await stopAgent(executionId);
        return { agent: await launchAgent({ ...launch, validate: false }) };
      });
    },

    /**
     * The undo of a failed or cancelled launch on its host, in one step: its agent stopped (when
     * it was asked to start one), then exactly what it made removed (never --force; a branch only
     * while at its recorded commit). For a cancelled first launch whose own step had succeeded,
     * what that step made is read from what it published. The workflow then only records.
     */
    async undoLaunch(input: {
      plan: LaunchPlan;
      executionId: string;
      agentRequested: boolean;
      made: MaterializedSlot[];
      fromPublished: boolean;
    }): Promise<void> {
      if (input.agentRequested) await stopAgent(input.executionId);
      const made = input.made.length === 0 && input.fromPublished ? await publishedBy(input.plan) : input.made;
      if (input.plan.role === 'materialized' || made.length > 0) await discardMaterialization(input.plan, made);
    },

    /**
     * A first launch's host side in one step: (a local target validated first) materialize,
     * publish the complete inventory and `ready` at once, then launchAgent. Each part is the
     * function the separate steps run. A failure after materializing stops this launch's agent
     * and removes exactly what it made before it fails, never retried: a retry would find its
     * own environment published. A re-run after a crash adopts the worktrees, finds the
     * inventory published by this session and the agent named by its execution id.
     */
    async materializeAndLaunch(input: LaunchAgentInput): Promise<StartedAgent> {
      const { plan } = input;
      if (input.validate) await validateWorkspace(plan);
      // The agents' uid (for a new task, a statement that takes it) read while the workspace is made.
      const uid = newWorkspaceUid(deps, plan);
      uid.catch(() => undefined); // its failure is met below, with the give's; never unhandled meanwhile
      const made = await materializeWorkspace(plan); // undoes its own failure
      // Given to the agents' uid while the inventory is published (the start then gives nothing);
      // settles with its failure, if any, which the launch then fails with.
      const given = uid
        .then((owner) => giveNewWorkspace(deps, publishedPlan(plan, made), owner))
        .then(
          () => null,
          (err: unknown) => err,
        );
      let stranded = false;
      try {
        // A launch an operator terminated while its workspace was being made stops here, at the
        // boundary where its separate steps used to stop, and undoes what it made.
        const runOf = servedWorkflowId();
        stranded = !!runOf && isStranded(await workflowLiveness(runOf));
        if (stranded) throw typedFailure('internal');
        await publishInventory(plan, made);
        const notGiven = await given;
        if (notGiven) throw notGiven;
        return await launchAgent({ ...input, plan: publishedPlan(plan, made), validate: false });
      } catch (err) {
        // Ended before anything is undone; its failure, when it is not the one handled here, is said.
        const notGiven = await given;
        if (notGiven && notGiven !== err)
          deps.logger.warn(
            { err: notGiven, sessionId: plan.sessionId },
            'the new workspace was not given to its agent uid',
          );
        // The database went away mid-way: nothing is undone (the undo needs it too); the step is
        // tried again once it answers, and the re-run adopts what this try made.
        if (outageOf(err) === 'database') throw err;
        await stopAgent(input.executionId);
        await discardMaterialization(plan, made);
        // No workflow records a terminated launch's failure (its code may still finish this task
        // in the worker, or, once the engine dropped it, never): this step does, as the workflow
        // would, so the environment is re-electable and a first launch leaves no session row.
        if (stranded) await recordMaterializationFailed(plan, 'internal', { firstLaunch: !input.resumeRun });
        if (err instanceof ApplicationFailure && err.nonRetryable) throw err;
        deps.logger.warn(
          { err, sessionId: plan.sessionId },
          'first launch failed after materializing; removed what it made',
        );
        throw typedFailure('internal');
      }
    },
  };
}
