/**
 * POST /v1/tasks/:id/sessions (a launch), GET /v1/tasks/:id/sessions and GET /v1/sessions (lists),
 * GET /v1/sessions/:id, POST /v1/sessions/:id/resume.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { latestExecution, latestExecutions } from '../../../db/executions';
import { restoresOfSessions } from '../../../db/saved-work';
import { inSnapshot, type Db } from '../../../db/pool';
import { admittedPlanOf, findSession, listSessions, listSessionsOfTask, type SessionRow } from '../../../db/sessions';
import { canonicalEnvironmentOf } from '../../../db/environments';
import { findTask } from '../../../db/tasks';
import { getSshTarget } from '../../../db/ssh-targets';
import { launchWorkflowId } from '../../../domain/workflow-ids';
import { launchHost } from '../placement';
import { runLaunch, runResume, startLaunch, startResume } from '../engine/engine-client';
import { badRequest, notFound, refusalError } from '../api-error';
import type { GatewayContext } from '../context';
import { lookahead, pageAnswer, pageOf, pageRequest, PageQueryFields } from '../pagination';
import { IdParams, errorResponses, launchErrorResponses } from '../schemas';
import { AcceptedLaunch, LaunchBody, LaunchResponse, ResumeBody, Session } from '../session-schemas';
import { temporalLinks } from '../engine/temporal-links';
import {
  engineOutage,
  idempotencyKeyOf,
  respondAsync,
  RunRequestHeaders,
  runIdOfKey,
  sessionRequests,
  validateEnv,
} from './session-requests';
import { sessionViews } from './session-views';
import { preparationsOf } from '../../../db/workspace-preparations';
import { preparationView } from '../preparation-view';

const SessionListQuery = Type.Object(PageQueryFields, { additionalProperties: false });
const SESSION_STATES = ['starting', 'running', 'stopped', 'exited', 'failed'] as const;
const AllSessionsQuery = Type.Object(
  {
    ...PageQueryFields,
    state: Type.Optional(Type.Union(SESSION_STATES.map((state) => Type.Literal(state)))),
  },
  { additionalProperties: false },
);

export function sessionRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  const { sessionViewOf, sessionView, acceptedView } = sessionViews(ctx);
  const { resolveAgent, refuseAgentRun, sessionFor, refuseLocal, refuseCheckoutBranch, containerImageOf } =
    sessionRequests(ctx);

  /**
   * A page of sessions as GET /v1/sessions/:id shows each: their latest executions and restores in
   * one query each, not one per row, and in the rows' own snapshot (an ended agent's execution
   * never beside its session still running).
   */
  async function sessionPage(readRows: (db: Db) => Promise<(SessionRow & { exact_at: string })[]>, limit: number) {
    const { rows, executions, restores, prepared } = await inSnapshot(ctx.pool, async (client) => {
      const rows = await readRows(client);
      const ids = rows.map((row) => row.id);
      return {
        rows,
        executions: await latestExecutions(client, ids),
        restores: await restoresOfSessions(client, ids),
        prepared: await preparationsOf(client, ids),
      };
    });
    return pageAnswer(
      rows,
      limit,
      (row) => row.id,
      (row) =>
        sessionViewOf(
          row,
          executions.get(row.id) ?? null,
          restores.get(row.id),
          prepared.filter((p) => p.session_id === row.id),
        ),
    );
  }

  return async (app) => {
    app.post(
      '/v1/tasks/:id/sessions',
      {
        config: { role: 'user' },
        schema: {
          tags: ['sessions'],
          params: IdParams,
          headers: RunRequestHeaders,
          body: LaunchBody,
          response: { 201: LaunchResponse, 202: AcceptedLaunch, ...launchErrorResponses },
        },
      },
      async (request, reply) => {
        const { executorType, agentProfile, name, prompt, sshTargetId } = request.body;
        const agent = resolveAgent(agentProfile, request.body);
        refuseAgentRun(agentProfile, executorType, prompt);
        const key = idempotencyKeyOf(request.headers);
        if (sshTargetId !== undefined && executorType !== 'ssh')
          throw badRequest('sshTargetId is for the ssh executor.');
        refuseLocal(executorType, request.callerRole);
        await refuseCheckoutBranch(executorType, request.params.id);
        const image = await containerImageOf(executorType, agentProfile, request.body.containerImage);
        // Read side by side (both only read); judged in the same order: the task, then the target, then the host.
        const host = launchHost(ctx, { taskId: request.params.id }).then(
          (id) => ({ id }),
          (err: unknown) => ({ err }),
        );
        if (!(await findTask(ctx.pool, request.params.id))) throw notFound('Task');
        if (sshTargetId !== undefined && !(await getSshTarget(ctx.pool, sshTargetId))) throw notFound('SSH target');
        if (
          executorType === 'ssh' &&
          sshTargetId === undefined &&
          !(await canonicalSshTarget(ctx.pool, request.params.id))
        )
          throw badRequest(
            'executorType ssh needs sshTargetId, the SSH target to work on (GET /v1/ssh-targets lists them).',
          );
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
          limits: agent.limits,
          prompt: prompt ?? null,
          name: name ?? null,
          hostId,
          sshTargetId: sshTargetId ?? null,
          ...(image ? { image } : {}),
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
        // A launch that made the workspace says what made it ready (its setup, its copies).
        const made = outcome.result.role === 'materialized' || outcome.result.role === 'transitioned';
        const prepared = made ? preparationView(await preparationsOf(ctx.pool, [sessionId])) : null;
        return reply.code(201).send({
          ...outcome.result,
          links,
          setup: prepared?.setup ?? null,
          copied: prepared?.copied ?? (made ? { files: [], skipped: [] } : null),
        });
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
        return sessionPage((db) => listSessionsOfTask(db, request.params.id, lookahead(page)), page.limit);
      },
    );

    // Every session of the instance (`tws stop --all`, the launcher's count of agents left running).
    app.get(
      '/v1/sessions',
      {
        config: { role: 'user' },
        schema: {
          tags: ['sessions'],
          querystring: AllSessionsQuery,
          response: { 200: pageOf(Session), ...errorResponses },
        },
      },
      async (request) => {
        const page = pageRequest(request.query);
        return sessionPage((db) => listSessions(db, { state: request.query.state }, lookahead(page)), page.limit);
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
          headers: RunRequestHeaders,
          body: ResumeBody,
          response: { 200: Session, 202: AcceptedLaunch, ...launchErrorResponses },
        },
      },
      async (request, reply) => {
        const key = idempotencyKeyOf(request.headers);
        const body = request.body ?? {};
        validateEnv(body.env);
        const session = await findSession(ctx.pool, request.params.id);
        if (!session) throw notFound('Session');
        refuseLocal(session.executor_type, request.callerRole);
        refuseAgentRun(session.agent_profile, session.executor_type, body.prompt);
        await refuseCheckoutBranch(session.executor_type, session.task_id);
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
  };
}

/** The SSH target the task's canonical workspace is on, if it is on one: an ssh launch without `sshTargetId` goes there. */
async function canonicalSshTarget(db: GatewayContext['pool'], taskId: string): Promise<string | null> {
  const env = await canonicalEnvironmentOf(db, taskId);
  return env?.executor_type === 'ssh' ? env.ssh_target_id : null;
}
