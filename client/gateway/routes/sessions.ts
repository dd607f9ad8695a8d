/** POST /v1/tasks/:id/sessions, GET /v1/tasks/:id/sessions (a list), GET /v1/sessions/:id, GET /v1/sessions/:id/workspace. */
import { createHash, randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { canonicalEnvironmentOf, environmentById } from '../../../db/environments';
import { inventoryOf } from '../../../db/inventory';
import { latestExecution, latestExecutions, type ExecutionRow } from '../../../db/executions';
import { claimIdempotencyKey } from '../../../db/idempotency';
import { restoresOfSessions, type SessionRestore } from '../../../db/saved-work';
import { deleteSessionEndingBorrow } from '../../../db/borrow-follow-up';
import { admittedPlanOf, findSession, listSessionsOfTask, type SessionRow } from '../../../db/sessions';
import { findTask, taskRepositories } from '../../../db/tasks';
import { getSshTarget } from '../../../db/ssh-targets';
import { agentVariableProblem } from '../../../domain/agent-env';
import { BUILTIN_SHELL_PROFILE, localExecutorAllowed } from '../../../domain/config';
import { ERROR_TABLE } from '../../../domain/errors';
import { outageOf } from '../../../domain/outage';
import { launchWorkflowId, sessionRunWorkflowId } from '../../../domain/workflow-ids';
import { launchHost } from '../placement';
import {
  cancelStartingRun,
  launchRunOutcome,
  runOutcomeOf,
  runLaunch,
  runResume,
  runStop,
  startLaunch,
  startResume,
} from '../../engine-client';
import { startFollowUps } from '../../../activities/follow-up-starts';
import { ApiError, badRequest, notFound, refusalError } from '../api-error';
import type { Role } from '../auth';
import type { GatewayContext } from '../context';
import { lookahead, pageAnswer, pageOf, pageRequest, PageQueryFields } from '../pagination';
import {
  AcceptedLaunch,
  IdParams,
  LaunchBody,
  LaunchResponse,
  ResumeBody,
  Session,
  Workspace,
  errorResponses,
} from '../schemas';
import { temporalLinks } from '../../temporal-links';

const SessionListQuery = Type.Object(PageQueryFields, { additionalProperties: false });

/** A resume's run id from its Idempotency-Key: the same key, the same run, with nothing stored. */
const runIdOfKey = (sessionId: string, key: string): string =>
  createHash('sha256').update(`resume:${sessionId}:${key}`).digest('hex').slice(0, 32);

export function sessionRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  function validateEnv(env: Record<string, string> | undefined): void {
    for (const name of Object.keys(env ?? {})) {
      const problem = agentVariableProblem(name);
      if (problem) throw badRequest(`Invalid env: ${problem}.`);
    }
  }

  /** The argv and the variables of the agent a launch starts: the profile's, with the request's args and env. */
  function resolveAgent(
    profile: string,
    body: { command?: string[]; args?: string[]; env?: Record<string, string> },
  ): { command: string[]; env: Record<string, string> } {
    validateEnv(body.env);
    if (profile === BUILTIN_SHELL_PROFILE && ctx.config.shellProfile) {
      if (!body.command) throw badRequest('The shell profile needs command (an argv array).');
      return { command: [...body.command, ...(body.args ?? [])], env: { ...(body.env ?? {}) } };
    }
    const configured = Object.prototype.hasOwnProperty.call(ctx.config.agentProfiles, profile)
      ? ctx.config.agentProfiles[profile]
      : undefined;
    if (!configured) throw badRequest('Unknown agent profile.');
    if (body.command) throw badRequest('command is only accepted by the shell profile.');
    return { command: [...configured.command, ...(body.args ?? [])], env: { ...configured.env, ...(body.env ?? {}) } };
  }

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
      links: temporalLinks(ctx.config, launchWorkflowId(id)),
      ...(outcome.error ? { error: { ...outcome.error, message: ERROR_TABLE[outcome.error.code].message } } : {}),
    };
  }

  /** A session with its row, and its latest execution if it has one. */
  function sessionViewOf(session: SessionRow, exec: ExecutionRow | null, restored: SessionRestore | undefined) {
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
          }
        : null,
      links: temporalLinks(ctx.config, sessionRunWorkflowId(session.id, session.admitted_run)),
      // What this session's launch did with the work an idle release saved [R6.10].
      restore: restored?.restore ?? null,
      restoreConflictRefs: restored?.conflictRefs ?? [],
    };
  }

  async function sessionView(id: string) {
    // The session, its latest execution and its restore are read side by side; with no session, the others are unused.
    const [session, exec, restored] = await Promise.all([
      findSession(ctx.pool, id),
      latestExecution(ctx.pool, id),
      restoresOfSessions(ctx.pool, [id]).then((found) => found.get(id)),
    ]);
    if (!session) return runOutcomeView(id);
    const view = sessionViewOf(session, exec, restored);
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

  /** `Prefer: respond-async` (RFC 7240): answer once admitted. */
  function respondAsync(headers: Record<string, string | string[] | undefined>): boolean {
    const prefer = headers['prefer'];
    return (Array.isArray(prefer) ? prefer.join(',') : (prefer ?? ''))
      .split(',')
      .some((p) => p.trim().toLowerCase() === 'respond-async');
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

  /** The Idempotency-Key header: absent, or 1 to 200 visible ASCII characters. */
  function idempotencyKeyOf(headers: Record<string, string | string[] | undefined>): string | null {
    const raw = headers['idempotency-key'];
    if (raw === undefined) return null;
    if (typeof raw !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(raw))
      throw badRequest('Idempotency-Key must be 1 to 200 visible ASCII characters.');
    return raw;
  }

  /**
   * The session this request works on: a new one, or, for an Idempotency-Key seen before with
   * the same request, the one that request got. The same key with another request is refused.
   */
  async function sessionFor(
    key: string | null,
    scope: string,
    request: unknown,
    freshSessionId: string,
  ): Promise<string> {
    if (!key) return freshSessionId;
    const fingerprint = createHash('sha256').update(JSON.stringify(request)).digest('hex');
    const claim = await claimIdempotencyKey(ctx.pool, { scope, key, fingerprint, sessionId: freshSessionId });
    if (claim.kind === 'mismatch') throw badRequest('This Idempotency-Key was used for a different request.');
    return claim.sessionId;
  }

  /** The engine did not answer: the outcome may be pending, and the same key (or the session id) finds it. */
  function engineOutage(err: unknown, sessionId: string): never {
    if (outageOf(err) === 'engine')
      throw new ApiError('engine_unavailable', undefined, { sessionId, outcome: 'pending' });
    throw err;
  }

  async function stop(sessionId: string): Promise<void> {
    // A session still starting has a run in flight that may yet spawn its agent: it is
    // cancelled (it undoes what it made), and waited for, so the stop (and a delete after it)
    // cannot leave an agent behind.
    const session = await findSession(ctx.pool, sessionId);
    if (session?.state === 'starting')
      await cancelStartingRun(ctx.temporal, sessionRunWorkflowId(sessionId, session.admitted_run));
    if (!(await findSession(ctx.pool, sessionId))) return; // a first launch cancelled: nothing of it is left
    await runStop(ctx.temporal, ctx.config, sessionId);
  }

  /** A `local` agent works in the source checkout itself: only whom TWS_LOCAL_EXECUTOR allows (issue 32); nothing changed. */
  const refuseLocal = (executorType: string, role: Role | null) => {
    if (executorType === 'local' && !localExecutorAllowed(ctx.config.localExecutor, role)) {
      throw new ApiError(
        'forbidden',
        ctx.config.localExecutor === 'off'
          ? 'The local executor is turned off on this service.'
          : 'The local executor needs the operator role on this service.',
      );
    }
  };

  return async (app) => {
    app.post(
      '/v1/tasks/:id/sessions',
      {
        config: { role: 'user' },
        schema: {
          tags: ['sessions'],
          params: IdParams,
          body: LaunchBody,
          response: { 201: LaunchResponse, 202: AcceptedLaunch, ...errorResponses },
        },
      },
      async (request, reply) => {
        const { executorType, agentProfile, name, prompt, sshTargetId } = request.body;
        const agent = resolveAgent(agentProfile, request.body);
        const key = idempotencyKeyOf(request.headers);
        if (sshTargetId !== undefined && executorType !== 'ssh')
          throw badRequest('sshTargetId is for the ssh executor.');
        refuseLocal(executorType, request.callerRole);
        // Read side by side (both only read); judged in the same order: the task, then the target, then the host.
        const host = launchHost(ctx, { taskId: request.params.id }).then(
          (id) => ({ id }),
          (err: unknown) => ({ err }),
        );
        if (!(await findTask(ctx.pool, request.params.id))) throw notFound('Task');
        if (sshTargetId !== undefined && !(await getSshTarget(ctx.pool, sshTargetId))) throw notFound('SSH target');
        const sessionId = await sessionFor(key, `launch:${request.params.id}`, request.body, randomUUID());
        const placed = await host;
        if ('err' in placed) throw placed.err;
        const hostId = placed.id;
        const launchRequest = {
          sessionId,
          taskId: request.params.id,
          executorType,
          agentProfile,
          command: agent.command,
          env: agent.env,
          prompt: prompt ?? null,
          name: name ?? null,
          hostId,
          sshTargetId: sshTargetId ?? null,
        };
        if (respondAsync(request.headers)) {
          // Answered once admitted; the session tells the outcome [api: Prefer: respond-async].
          const admitted = await startLaunch(
            ctx.temporal,
            ctx.config,
            launchRequest,
            async () => (await admittedPlanOf(ctx.pool, sessionId)) !== null,
          ).catch((err) => engineOutage(err, sessionId));
          if (!admitted.ok) throw refusalError(admitted);
          return reply.code(202).send(await acceptedView(sessionId));
        }
        const outcome = await runLaunch(ctx.temporal, ctx.config, launchRequest).catch((err) =>
          engineOutage(err, sessionId),
        );
        const links = temporalLinks(ctx.config, launchWorkflowId(sessionId));
        if (outcome === null) {
          // The run that made this session is past the engine's retention: the session row answers.
          const session = await findSession(ctx.pool, sessionId);
          const exec = session ? await latestExecution(ctx.pool, sessionId) : null;
          if (!session?.environment_id || !exec) throw notFound('Session');
          return reply.code(201).send({
            sessionId,
            taskEnvironmentId: session.environment_id,
            role: session.role ?? 'attached',
            state: session.state,
            executionId: exec.id,
            links,
          });
        }
        if (!outcome.ok)
          throw refusalError(
            outcome,
            outcome.code === 'invalid_request' ? 'The agent command could not be started.' : undefined,
          );
        return reply.code(201).send({ ...outcome.result, links });
      },
    );

    app.get(
      '/v1/tasks/:id/sessions',
      {
        config: { role: 'user' },
        schema: {
          tags: ['sessions'],
          params: IdParams,
          querystring: SessionListQuery,
          response: { 200: pageOf(Session), ...errorResponses },
        },
      },
      async (request) => {
        const page = pageRequest(request.query);
        if (!(await findTask(ctx.pool, request.params.id))) throw notFound('Task');
        const rows = await listSessionsOfTask(ctx.pool, request.params.id, lookahead(page));
        // Each session's latest execution and restore: one query each for the page, not one per row.
        const ids = rows.map((row) => row.id);
        const [executions, restores] = await Promise.all([
          latestExecutions(ctx.pool, ids),
          restoresOfSessions(ctx.pool, ids),
        ]);
        return pageAnswer(
          rows,
          page.limit,
          (row) => row.id,
          (row) => sessionViewOf(row, executions.get(row.id) ?? null, restores.get(row.id)),
        );
      },
    );

    app.get(
      '/v1/sessions/:id',
      {
        config: { role: 'user' },
        schema: { tags: ['sessions'], params: IdParams, response: { 200: Session, ...errorResponses } },
      },
      async (request) => {
        return sessionView(request.params.id);
      },
    );

    app.post(
      '/v1/sessions/:id/resume',
      {
        config: { role: 'user' },
        schema: {
          tags: ['sessions'],
          params: IdParams,
          body: ResumeBody,
          response: { 200: Session, 202: AcceptedLaunch, ...errorResponses },
        },
      },
      async (request, reply) => {
        const key = idempotencyKeyOf(request.headers);
        const body = request.body ?? {};
        validateEnv(body.env);
        const session = await findSession(ctx.pool, request.params.id);
        if (!session) throw notFound('Session');
        refuseLocal(session.executor_type, request.callerRole);
        // The run is this request's: the same key names the same run (and joins it); nothing is
        // counted here, only the run's admission counts it.
        const runId = key ? runIdOfKey(session.id, key) : randomUUID();
        if (key) await sessionFor(key, `resume:${session.id}`, body, session.id);
        const target = {
          id: session.id,
          taskId: session.task_id,
          executorType: session.executor_type,
          hostId: await launchHost(ctx, { taskId: session.task_id, sessionId: session.id }),
        };
        const extra = { args: body.args, env: body.env, prompt: body.prompt ?? null };
        if (respondAsync(request.headers)) {
          const admitted = await startResume(
            ctx.temporal,
            ctx.config,
            target,
            runId,
            extra,
            async () => (await findSession(ctx.pool, session.id))?.admitted_run === runId,
          ).catch((err) => engineOutage(err, session.id));
          if (!admitted.ok) throw refusalError(admitted);
          return reply.code(202).send(await acceptedView(session.id));
        }
        const outcome = await runResume(ctx.temporal, ctx.config, target, runId, extra).catch((err) =>
          engineOutage(err, session.id),
        );
        if (outcome && !outcome.ok) throw refusalError(outcome);
        return sessionView(session.id);
      },
    );

    app.post(
      '/v1/sessions/:id/stop',
      {
        config: { role: 'user' },
        schema: { tags: ['sessions'], params: IdParams, response: { 200: Session, ...errorResponses } },
      },
      async (request) => {
        const session = await findSession(ctx.pool, request.params.id);
        if (!session) throw notFound('Session');
        await stop(session.id);
        return sessionView(session.id);
      },
    );

    // Deleting a session stops its agent and forgets the session; it never removes files,
    // worktrees or branches, even for the last session of a task [R6].
    app.delete(
      '/v1/sessions/:id',
      {
        config: { role: 'user' },
        schema: { tags: ['sessions'], params: IdParams, response: { 204: Type.Null(), ...errorResponses } },
      },
      async (request, reply) => {
        const session = await findSession(ctx.pool, request.params.id);
        if (!session) throw notFound('Session');
        await stop(session.id);
        // The last borrow of an archived owner's environment may end here: its follow-up cleanup
        // was reserved with the delete, and is started now (or by the consistency check).
        const followUps = await deleteSessionEndingBorrow(ctx.pool, session.id);
        await startFollowUps(ctx.temporal, ctx.config, followUps, (job, err) =>
          request.log.warn(
            { err, operationId: job.operationId, taskId: job.taskId },
            'follow-up cleanup not started; the consistency check starts it',
          ),
        );
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/v1/sessions/:id/workspace',
      {
        config: { role: 'user' },
        schema: { tags: ['sessions'], params: IdParams, response: { 200: Workspace, ...errorResponses } },
      },
      async (request) => {
        const session = await findSession(ctx.pool, request.params.id);
        if (!session) throw notFound('Session');
        // A session with no environment of its own (legacy) sees its task's canonical one when
        // there is one: the source checkout only stands in where no workspace exists [R2.3].
        const env = session.environment_id
          ? await environmentById(ctx.pool, session.environment_id)
          : await canonicalEnvironmentOf(ctx.pool, session.task_id);
        // The environment's path wins over anything recorded on the session [R2.2].
        if (env?.workspace_path && env.materialized && (env.status === 'ready' || env.status === 'stopped')) {
          const rows = await inventoryOf(ctx.pool, env.id);
          return {
            taskEnvironmentId: env.id,
            executorType: env.executor_type,
            workspacePath: env.workspace_path,
            repositories: rows.map((r) => ({
              repositoryId: r.repository_id,
              worktreePath: r.worktree_path ?? env.workspace_path!,
              branch: r.worktree_branch,
            })),
            source: 'environment' as const,
          };
        }
        if (env) {
          // An environment with no workspace now says where it stands; its session's source
          // checkout never stands in for it [R2.2]: released (archive then unarchive, a reset: the
          // next launch or resume materializes afresh), being prepared, or failed.
          const source =
            env.status === 'released'
              ? ('released' as const)
              : env.status === 'creating'
                ? ('preparing' as const)
                : ('failed' as const);
          return {
            taskEnvironmentId: env.id,
            executorType: env.executor_type,
            workspacePath: null,
            repositories: [],
            source,
          };
        }
        // Only a session that never had an environment may see its source checkout [R2.3].
        const repos = await taskRepositories(ctx.pool, session.task_id);
        if (repos.length === 0) throw notFound('Workspace');
        return {
          taskEnvironmentId: null,
          executorType: session.executor_type,
          workspacePath: repos[0]!.repository_path,
          repositories: repos.map((r) => ({
            repositoryId: r.repository_id,
            worktreePath: r.repository_path,
            branch: null,
          })),
          source: 'legacy_fallback' as const,
        };
      },
    );
  };
}
