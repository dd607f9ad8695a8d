/**
 * What the session routes answer about a session: its row and latest execution, or, with no row,
 * what its launch run tells (still being admitted, or a first launch that left nothing) [R1.4].
 */
import { latestExecution, type ExecutionRow } from '../../../db/executions';
import { inSnapshot } from '../../../db/pool';
import { restoresOfSessions, type SessionRestore } from '../../../db/saved-work';
import { findSession, type SessionRow } from '../../../db/sessions';
import { environmentUsage, type TaskUsage } from '../../../db/task-usage';
import { ERROR_TABLE } from '../../../domain/errors';
import { launchWorkflowId, sessionRunWorkflowId } from '../../../domain/workflow-ids';
import { launchRunOutcome, runOutcomeOf } from '../engine/engine-client';
import { notFound } from '../api-error';
import type { GatewayContext } from '../context';
import { temporalLinks } from '../engine/temporal-links';
import { preparationsOf, type PreparationRow } from '../../../db/workspace-preparations';
import { preparationView } from '../preparation-view';

export function sessionViews(ctx: GatewayContext) {
  /**
   * A session with no row: a launch still before its admission (answered 202), or a first launch
   * that failed, was refused or cancelled and left no row [R1.4]. Its launch run tells which.
   */
  async function runOutcomeView(id: string) {
    const outcome = await launchRunOutcome(ctx.temporal, id);
    if (!outcome) throw notFound('Session');
    return {
      id,
      taskId: outcome.taskId,
      state: outcome.state,
      taskEnvironmentId: null,
      executorType: outcome.executorType,
      agentProfile: outcome.agentProfile,
      role: null,
      name: null,
      execution: null,
      limits: null,
      usage: null,
      links: temporalLinks(ctx.config, launchWorkflowId(id)),
      ...(outcome.error ? { error: { ...outcome.error, message: ERROR_TABLE[outcome.error.code].message } } : {}),
    };
  }

  /** A session with its row, and its latest execution if it has one. */
  function sessionViewOf(
    session: SessionRow,
    exec: ExecutionRow | null,
    restored: SessionRestore | undefined,
    prepared: PreparationRow[] = [],
  ) {
    return {
      id: session.id,
      taskId: session.task_id,
      state: session.state,
      taskEnvironmentId: session.environment_id,
      executorType: session.executor_type,
      agentProfile: session.agent_profile,
      role: session.role,
      name: session.name,
      execution: exec
        ? {
            id: exec.id,
            pid: exec.pid,
            hostId: exec.host_id,
            startedAt: exec.started_at.toISOString(),
            endedAt: exec.ended_at?.toISOString() ?? null,
            exitCode: exec.exit_code,
            signal: exec.signal,
            state: exec.status,
            status: exec.status,
            outcome: exec.outcome,
          }
        : null,
      limits: ctx.config.limits.enabled ? (session.agent_limits ?? ctx.config.limits.defaults) : null,
      usage: null as TaskUsage | null,
      links: temporalLinks(ctx.config, sessionRunWorkflowId(session.id, session.admitted_run)),
      // What this session's launch did with the work an idle release saved [R6.10].
      restore: restored?.restore ?? null,
      restoreConflictRefs: restored?.conflictRefs ?? [],
      preparation: preparationView(prepared),
    };
  }

  async function sessionView(id: string) {
    // The session, its latest execution and its restore in one snapshot: an agent's end moves its
    // execution and its session in one commit, and a reader sees both moves or neither.
    const read = await inSnapshot(ctx.pool, async (client) => {
      const session = await findSession(client, id);
      if (!session) return null;
      const exec = await latestExecution(client, id);
      const restored = (await restoresOfSessions(client, [id])).get(id);
      const usage = session.environment_id ? await environmentUsage(client, session.environment_id) : null;
      return { session, exec, restored, usage, prepared: await preparationsOf(client, [id]) };
    });
    if (!read) return runOutcomeView(id);
    const { session, exec, restored, usage, prepared } = read;
    const view = { ...sessionViewOf(session, exec, restored, prepared), usage };
    // A failed session says why, as a failed first launch does: from the run that admitted it last (a resume's).
    if (session.state === 'failed') {
      const outcome = await runOutcomeOf(ctx.temporal, sessionRunWorkflowId(session.id, session.admitted_run)).catch(
        () => null,
      );
      if (outcome?.error)
        return { ...view, error: { ...outcome.error, message: ERROR_TABLE[outcome.error.code].message } };
    }
    return view;
  }

  /** A 202's body: the session admitted (or still being admitted), where to read its outcome. */
  async function acceptedView(sessionId: string) {
    const view = await sessionView(sessionId);
    return {
      sessionId,
      state: view.state,
      taskEnvironmentId: view.taskEnvironmentId,
      role: view.role,
      links: view.links,
    };
  }

  return { sessionViewOf, sessionView, acceptedView };
}
