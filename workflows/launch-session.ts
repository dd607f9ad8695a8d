/**
 * launch/<sessionId>: admit → validate (attach) or materialize → publish inventory + ready →
 * start the agent on the workspace's host → mark running. On failure it undoes exactly what
 * this launch made and fails with the typed code. A resume carries out its admitted plan with
 * the same steps (`carryOut`).
 */
import {
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  deprecatePatch,
  isCancellation,
  patched,
  uuid4,
} from '@temporalio/workflow';
import {
  type LaunchPlan,
  type LaunchRequest,
  type LaunchResult,
  type MaterializedSlot,
  type StartedOn,
} from '../domain/launch';
import type { LaunchAgentInput } from '../activities/launch-agent';
import type { CoresidencySite } from '../domain/coresidency';
import { workspaceStepsOf } from '../domain/launch-plan';
import type { SessionState } from '../domain/session';
import { hostSteps, recordSteps, startedOnOf } from './activity-proxies';
import { setPhase } from './phase';
import { asTypedFailure } from './typed-failure';

const records = recordSteps();

const phase = setPhase;

/** What differs between a launch and a resume once admitted: the agent's argv and variables, the site, the states it may start from. */
export interface AgentRun {
  command: string[];
  env: Record<string, string>;
  prompt: string | null;
  site: CoresidencySite;
  /** Session states from which the agent's start marks it running (a transition waits for its rebind). */
  startFrom: SessionState[];
  /**
   * A resume: its run (counted once its agent started) and the executions to stop before the
   * agent starts (one agent per session). The workspace is validated before they stop, so a
   * refused resume leaves the previous agent running.
   */
  resume?: { runId: string; stopFirst: { executionId: string; hostId: string }[] };
}

export async function launchSession(req: LaunchRequest): Promise<LaunchResult> {
  const cancellation = watchCancellation();
  // 1. Admission: one transaction elects, attaches or refuses [R1].
  let plan: LaunchPlan;
  try {
    plan = await CancellationScope.nonCancellable(() => records.admitLaunch(req));
  } catch (err) {
    phase('refused');
    throw asTypedFailure(err);
  }
  return carryOut(
    plan,
    startedOnOf(req),
    { command: req.command, env: req.env ?? {}, prompt: req.prompt ?? null, site: 'launch', startFrom: ['starting'] },
    cancellation,
  );
}

/**
 * A launch's cancellation (its session stopped or deleted while starting) is read, not obeyed
 * mid-step: every step runs to its end, so what it did is known. A launch runs in one workflow
 * task, and a cancellation that arrives during it makes the engine refuse that task's
 * completion; the task then runs again from the start, cancelled, with nothing of the first try
 * in its history. Run to their end, the steps (each idempotent) find what that try made and
 * answer the same, and the launch then undoes it all.
 */
export function watchCancellation(): { requested: boolean } {
  const state = { requested: false };
  CancellationScope.current().cancelRequested.catch(() => void (state.requested = true));
  return state;
}

/** The admitted plan, carried out on its host; a failure undoes what this run made and fails typed. */
export async function carryOut(
  plan: LaunchPlan,
  startedOn: StartedOn | undefined,
  run: AgentRun,
  cancellation: { requested: boolean } = { requested: false },
): Promise<LaunchResult> {
  return CancellationScope.nonCancellable(() => carryOutSteps(plan, startedOn, run, cancellation));
}

async function carryOutSteps(
  plan: LaunchPlan,
  startedOn: StartedOn | undefined,
  run: AgentRun,
  cancellation: { requested: boolean },
): Promise<LaunchResult> {
  const host = hostSteps(plan.hostId, startedOn);
  let made: MaterializedSlot[] = [];
  // Named before it starts, so compensation can stop exactly this process whatever failed.
  const executionId = uuid4();
  let agentRequested = false;
  // False while nothing of the session's was touched: a resume refused by its validation leaves it as it was.
  let touched = false;
  // A transition marks the session running only after the rebind.
  const agentInput = (validate: boolean): LaunchAgentInput => ({
    plan,
    command: run.command,
    env: run.env,
    prompt: run.prompt,
    executionId,
    site: run.site,
    validate,
    markRunningFrom: plan.role === 'transitioned' ? null : run.startFrom,
    resumeRun: run.resume?.runId ?? null,
  });
  const running = (agent: { status: string; executionId: string }): LaunchResult => {
    if (cancellation.requested) throw new CancelledFailure('The launch was cancelled.');
    phase('running');
    return {
      sessionId: plan.sessionId,
      taskEnvironmentId: plan.environmentId,
      role: plan.role,
      state: agent.status === 'running' ? 'running' : 'exited',
      executionId: agent.executionId,
    };
  };
  try {
    // A resume's previous process goes first: one agent per session. Not this run's own: a re-run
    // after a worker died finds the agent it started already running, and keeps it. An attach is
    // validated before that, so a refusal leaves the previous agent as it was.
    const previous = (run.resume?.stopFirst ?? []).filter((e) => e.executionId !== executionId);
    // A resume whose previous agents are all on the workspace's host: validation, the stops and
    // the start in one host step (older histories: three). Set before it runs, so a failure of the
    // step is handled as one after the stop; a validation refusal comes back as it is instead.
    if (
      previous.length > 0 &&
      plan.role === 'attached' &&
      previous.every((e) => e.hostId === plan.hostId) &&
      patched('resume-in-one-host-step')
    ) {
      touched = true;
      agentRequested = true;
      const resumed = await host.resumeAgent({
        ...agentInput(false),
        stopFirst: previous.map((e) => e.executionId),
      });
      if ('refused' in resumed) {
        touched = false;
        agentRequested = false;
        throw ApplicationFailure.create({ ...resumed.refused, nonRetryable: true });
      }
      return running(resumed.agent);
    }
    let validated = false;
    if (previous.length > 0 && plan.role === 'attached') {
      await host.validateWorkspace(plan);
      validated = true;
    }
    touched = true;
    for (const exec of previous) await hostSteps(exec.hostId, startedOn).stopAgent(exec.executionId);
    // Even when cancelled already, the steps run: a first try whose completion the engine refused
    // may have done them, and only their idempotent re-run finds what it made, to undo it.
    let validate = false;
    if (plan.role === 'materialized') {
      // 2a. On the host in one step: materialize, publish the complete inventory and `ready` at
      // once, then what step 3 does. It undoes what it made itself if it fails.
      phase('materializing');
      agentRequested = true;
      const agent = await host.materializeAndLaunch(agentInput(workspaceStepsOf(plan).validate));
      return running(agent);
    } else if (plan.role === 'transitioned') {
      // 2c. Executor transition: the target workspace is validated (local) or created (worktree)
      // afresh; nothing of the old executor's is used [R3.1-R3.3].
      phase('transitioning');
      validate = workspaceStepsOf(plan).validate;
      if (workspaceStepsOf(plan).createWorktrees) made = await host.materializeWorkspace(plan);
    } else {
      // 2b. Attach is read-only validation of the canonical workspace [R1.2].
      validate = !validated;
    }

    // 3. On the host in one step: validation (attach, local target), co-residency recorded before
    // the process starts [R5], the agent with its own execution identity [R1.3], session running.
    agentRequested = true;
    const agent = await host.launchAgent(agentInput(validate));
    if (plan.role === 'transitioned') {
      // The environment changes executor only now that the target launch succeeded [R3].
      await records.rebindEnvironment(plan, made);
      await records.markSessionRunning(plan.sessionId, run.startFrom, run.resume?.runId ?? null);
    }
    return running(agent);
  } catch (err) {
    // A cancelled launch (its session stopped or deleted while starting) undoes what it made too.
    // Deprecated (docs/operating.md, "Upgrades and workflow versions"): launches live minutes.
    deprecatePatch('undo-in-one-host-step');
    // The host step undoes files and processes; the workflow only records.
    if (agentRequested || made.length > 0 || plan.role === 'materialized') {
      await host.undoLaunch({
        plan,
        executionId,
        agentRequested,
        made,
        fromPublished: plan.role === 'materialized' && agentRequested && isCancellation(err),
      });
    }
    if (plan.role === 'materialized')
      await records.recordMaterializationFailed(plan, asTypedFailure(err).type ?? 'internal', {
        firstLaunch: !run.resume,
      });
    else if (touched || !run.resume) await records.settleRefusedSession(plan.sessionId, { firstLaunch: !run.resume });
    phase('failed');
    throw asTypedFailure(err);
  }
}
