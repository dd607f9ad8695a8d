/**
 * What the launch and resume routes read from a request before they start a run: the agent and
 * its variables, the Idempotency-Key and the session it names, `Prefer: respond-async`, and who
 * may use the `local` executor; and how an engine that did not answer is told.
 */
import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { claimIdempotencyKey } from '../../../db/idempotency';
import { taskRepositories } from '../../../db/tasks';
import { agentCommitsOnCheckoutBranch, askedCheckoutBranch } from '../../../domain/task-layout';
import { agentVariableProblem } from '../../../domain/agent-env';
import { localExecutorAllowed } from '../../../domain/agent-settings';
import { BUILTIN_SHELL_PROFILE, profileNamed } from '../../../domain/agent-builtins';
import { hasCredentials, promptProblem } from '../../../domain/agent-prompt';
import { overMaximum, resolveLimits, type AgentLimits, type LimitsRequest } from '../../../domain/limits';
import { outageOf } from '../../../domain/outage';
import { ApplicationFailure } from '@temporalio/common';
import { isErrorCode, type ErrorCode } from '../../../domain/errors';
import { requireEngine, requireImage } from '../../../executors/container/engine';
import { ApiError, badRequest } from '../api-error';
import type { Role } from '../auth';
import type { GatewayContext } from '../context';

type Headers = Record<string, string | string[] | undefined>;

/**
 * The headers a launch and a resume read (below), for the document: any string passes the
 * schema, as each is judged by its reader here, with its own message.
 */
export const RunRequestHeaders = Type.Object({
  'Idempotency-Key': Type.Optional(
    Type.String({
      description:
        '1 to 200 visible ASCII characters: the same key returns the same session (its run joined, never started twice); the same key with another request is 400.',
    }),
  ),
  Prefer: Type.Optional(
    Type.String({
      description: '`respond-async` (RFC 7240): answer 202 once admitted; the session then tells the outcome.',
    }),
  ),
});

export function validateEnv(env: Record<string, string> | undefined): void {
  for (const name of Object.keys(env ?? {})) {
    const problem = agentVariableProblem(name);
    if (problem) throw badRequest(`Invalid env: ${problem}.`);
  }
}

/** `Prefer: respond-async` (RFC 7240): answer once admitted. */
export function respondAsync(headers: Headers): boolean {
  const prefer = headers['prefer'];
  return (Array.isArray(prefer) ? prefer.join(',') : (prefer ?? ''))
    .split(',')
    .some((p) => p.trim().toLowerCase() === 'respond-async');
}

/** The Idempotency-Key header: absent, or 1 to 200 visible ASCII characters. */
export function idempotencyKeyOf(headers: Headers): string | null {
  const raw = headers['idempotency-key'];
  if (raw === undefined) return null;
  if (typeof raw !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(raw))
    throw badRequest('Idempotency-Key must be 1 to 200 visible ASCII characters.');
  return raw;
}

/** A resume's run id from its Idempotency-Key: the same key, the same run, with nothing stored. */
export const runIdOfKey = (sessionId: string, key: string): string =>
  createHash('sha256').update(`resume:${sessionId}:${key}`).digest('hex').slice(0, 32);

/** The engine did not answer: the outcome may be pending, and the same key (or the session id) finds it. */
export function engineOutage(err: unknown, sessionId: string): never {
  if (outageOf(err) === 'engine')
    throw new ApiError('engine_unavailable', undefined, { sessionId, outcome: 'pending' });
  throw err;
}

export function sessionRequests(ctx: GatewayContext) {
  /** The argv and the variables of the agent a launch starts: the profile's, with the request's args and env. */
  function resolveAgent(
    profile: string,
    body: { command?: string[]; args?: string[]; env?: Record<string, string>; limits?: LimitsRequest },
  ): { command: string[]; env: Record<string, string>; limits: AgentLimits } {
    validateEnv(body.env);
    const launchLimits = body.limits ?? {};
    const over = overMaximum(launchLimits, ctx.config.limits.maximum);
    // The maximum is the operator's setting, not a secret: the caller can fit the request to it.
    if (over)
      throw new ApiError(
        'limits_exceeded',
        `limits.${over} is above the operator's maximum of ${ctx.config.limits.maximum[over]}.`,
        {
          limit: over,
          maximum: ctx.config.limits.maximum[over],
        },
      );
    if (profile === BUILTIN_SHELL_PROFILE && ctx.config.shellProfile) {
      if (!body.command) throw badRequest('The shell profile needs command (an argv array).');
      return {
        command: [...body.command, ...(body.args ?? [])],
        env: { ...(body.env ?? {}) },
        limits: resolveLimits(ctx.config.limits.defaults, {}, launchLimits),
      };
    }
    const configured = Object.prototype.hasOwnProperty.call(ctx.config.agentProfiles, profile)
      ? ctx.config.agentProfiles[profile]
      : undefined;
    if (!configured) {
      // The names are the operator's configuration, not a secret: the caller can pick one.
      const names = [
        ...(ctx.config.shellProfile ? [BUILTIN_SHELL_PROFILE] : []),
        ...Object.keys(ctx.config.agentProfiles),
      ];
      throw badRequest(
        `agentProfile is not a profile of this service; the profiles are: ${names.join(', ') || '(none)'}.`,
      );
    }
    if (body.command) throw badRequest('command is only accepted by the shell profile.');
    return {
      command: [...configured.command, ...(body.args ?? [])],
      env: { ...configured.env, ...(body.env ?? {}) },
      limits: resolveLimits(ctx.config.limits.defaults, configured.limits ?? {}, launchLimits),
    };
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

  /** A `local` agent works in the source checkout itself: only whom TWS_LOCAL_EXECUTOR allows; nothing changed. */
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

  /**
   * A task on an existing branch it asked for (`checkoutBranch`) launched with an executor whose
   * agent cannot commit on it (`container`; `worktree` when sandboxed: a task created before the
   * creation refused it): refused before anything is written, rather than found out at its first commit.
   */
  async function refuseCheckoutBranch(executorType: string, taskId: string): Promise<void> {
    if (agentCommitsOnCheckoutBranch(executorType, ctx.config.agentSandbox)) return;
    if ((await taskRepositories(ctx.pool, taskId)).some(askedCheckoutBranch))
      throw new ApiError(
        'checkout_branch_unsupported',
        "This executor's agents can commit only on their task's own branch, not on the existing branch this task checks out: choose another executor, or create a task with that branch as baseBranch; nothing was created.",
      );
  }

  /**
   * The image a `container` launch's agents run in (the request's, one the operator allows; else its
   * profile's; else the default), with the engine answering and the image on the host: refused
   * before anything is written otherwise (400 when not offered, 503 when the engine does not answer,
   * 409 when the image is not here). Null for every other executor, which names no image.
   */
  async function containerImageOf(
    executorType: string,
    profile: string,
    requested: string | undefined,
  ): Promise<string | undefined> {
    if (executorType !== 'container') {
      if (requested !== undefined) throw badRequest('containerImage is for the container executor.');
      return undefined;
    }
    const settings = ctx.config.containers;
    if (!settings.engineSocket) throw new ApiError('executor_unavailable', undefined, { offered: false });
    const profileImage = Object.prototype.hasOwnProperty.call(ctx.config.agentProfiles, profile)
      ? ctx.config.agentProfiles[profile]?.image
      : undefined;
    const fallback = profileImage ?? settings.image;
    if (requested !== undefined && requested !== fallback && !settings.allowedImages.includes(requested))
      // The allowed names are the operator's configuration, not a secret: the caller can pick one.
      throw badRequest(
        `containerImage is not an image this service allows; the images are: ${[fallback, ...settings.allowedImages].join(', ')}.`,
      );
    const image = requested ?? fallback;
    try {
      const { client } = await requireEngine(settings);
      await requireImage(client, image);
    } catch (err) {
      if (err instanceof ApplicationFailure && isErrorCode(err.type ?? ''))
        throw new ApiError(err.type as ErrorCode, undefined, (err.details?.[0] as Record<string, unknown>) ?? {});
      throw err;
    }
    return image;
  }

  /**
   * A run of a profile that reads its prompt needs one it can take (an argument is one argv
   * string: at most 128 KiB, no NUL); one with credentials runs only where they are given (the
   * host, its containers): refused before anything is written. Names nothing of the credentials.
   */
  function refuseAgentRun(profileName: string, executorType: string, prompt: string | null | undefined): void {
    const profile = profileNamed(ctx.config, profileName);
    if (!profile) return;
    const problem = promptProblem(profile.prompt, prompt);
    if (problem) throw badRequest(`The ${profileName} profile ${problem}; nothing was created.`);
    if (executorType === 'ssh' && hasCredentials(profile.credentials))
      throw badRequest(
        `The ${profileName} profile has credentials, which are given on this service's hosts only, never sent to an SSH target: choose another executor; nothing was created.`,
      );
    // A container's home is made with it: a file cannot be shown read-only in it afterwards.
    if (executorType === 'container' && (profile.credentials?.files.length ?? 0) > 0)
      throw badRequest(
        `The ${profileName} profile has credential files, which the container executor cannot place (its variables it can): choose the worktree executor; nothing was created.`,
      );
  }

  return { resolveAgent, refuseAgentRun, sessionFor, refuseLocal, refuseCheckoutBranch, containerImageOf };
}
