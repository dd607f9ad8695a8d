/**
 * /v1/ssh-targets (operator): the machines the SSH executor works on, registered, listed, changed
 * and removed. A target is stored, and a change written, only after one check over SSH from the
 * host that holds its key (`hostId`): its pinned host key, this service's key, a usable workspace
 * root. No answer shows the key's path, the key, or the known_hosts lines; a refusal says what
 * failed in a word. A target still used by an environment is never removed.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { isUniqueViolation } from '../../../db/pool';
import {
  deleteSshTarget,
  getSshTarget,
  insertSshTarget,
  listSshTargets,
  updateSshTarget,
  type SshTargetRecord,
} from '../../../db/ssh-targets';
import { hostLiveness } from '../../../db/hosts';
import { closeSshConnection, SshRefusal, type SshTarget } from '../../../ssh/connection';
import { checkSshTargetOn } from '../engine/engine-hosts';
import { parseKnownHosts } from '../../../ssh/known-hosts';
import { checkSshTarget } from '../../../ssh/target-check';
import { ApiError, badRequest, notFound, refusalError } from '../api-error';
import type { GatewayContext } from '../context';
import { pageOf, readPage } from '../pagination';
import { errorResponses, IdParams } from '../schemas';
import { CreateSshTargetBody, PageQuery, PatchSshTargetBody, SshTargetView, view } from '../ssh-target-schemas';

/** The workspace root as stored: one spelling per folder (no `.`, `//` or trailing slash); `..` is refused, never resolved. */
function workspaceRootOf(given: string): string {
  if (given.split('/').includes('..')) throw badRequest('workspaceRoot may not contain "..".');
  const normal = path.posix.normalize(given);
  return normal.length > 1 ? normal.replace(/\/$/, '') : normal;
}

/** The fields a registration and a change both give, checked the same way; a bad one is a 400 that names it. */
function checkedFields<T extends { host?: string; knownHosts?: string; workspaceRoot?: string }>(body: T): T {
  if (body.host !== undefined && body.host.includes(':') && !net.isIPv6(body.host))
    throw badRequest('host must be a host name or an IP address.');
  if (body.knownHosts !== undefined && parseKnownHosts(body.knownHosts).length === 0)
    throw badRequest('knownHosts has no entry this service can pin (host keytype base64).');
  return body.workspaceRoot === undefined ? body : { ...body, workspaceRoot: workspaceRootOf(body.workspaceRoot) };
}

export function sshTargetRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  /**
   * The check runs where the key is: here when this gateway is that host's own process (it runs
   * that host's launches), else on that host's worker through its queue. An unknown host is bad
   * input; one that does not answer, `host_unavailable`.
   */
  async function checkOnItsHost(target: SshTarget & { hostId: string }): Promise<'usable' | 'workspace_root_unusable'> {
    if (target.hostId === ctx.config.hostId && ctx.config.gatewayRunsLaunches) {
      try {
        return await checkSshTarget(target);
      } catch (err) {
        if (err instanceof SshRefusal) throw new ApiError(err.code, undefined, { reason: err.reason });
        throw err;
      }
    }
    const liveness = await hostLiveness(ctx.pool, target.hostId);
    if (liveness === 'unknown') throw badRequest('hostId names no host of this service.');
    if (liveness === 'down') throw new ApiError('host_unavailable');
    const answer = await checkSshTargetOn(ctx.temporal, ctx.config, target.hostId, target);
    if (!answer.ok) throw refusalError(answer);
    return answer.checked;
  }

  return async (app) => {
    app.post(
      '/v1/ssh-targets',
      {
        config: { role: 'operator' },
        schema: {
          tags: ['ssh-targets'],
          body: CreateSshTargetBody,
          response: { 201: SshTargetView, ...errorResponses },
        },
      },
      async (request, reply) => {
        const body = checkedFields(request.body);
        const target = {
          id: randomUUID(),
          name: body.name,
          host: body.host,
          port: body.port ?? 22,
          user: body.user,
          privateKeyPath: body.privateKeyPath,
          knownHosts: body.knownHosts,
          workspaceRoot: body.workspaceRoot,
          hostId: body.hostId ?? ctx.config.hostId,
        };
        const checked = await checkOnItsHost(target);
        if (checked !== 'usable') throw new ApiError('workspace_root_unusable');
        try {
          return reply.code(201).send(view(await insertSshTarget(ctx.pool, target)));
        } catch (err) {
          if (isUniqueViolation(err)) throw new ApiError('ssh_target_name_taken');
          throw err;
        }
      },
    );

    app.patch(
      '/v1/ssh-targets/:id',
      {
        config: { role: 'operator' },
        schema: {
          tags: ['ssh-targets'],
          params: IdParams,
          body: PatchSshTargetBody,
          response: { 200: SshTargetView, ...errorResponses },
        },
      },
      async (request) => {
        const change = checkedFields(request.body);
        const before = await getSshTarget(ctx.pool, request.params.id);
        if (!before) throw notFound('SSH target');
        const after = { ...before, ...change };
        // The target as it would be is checked as at registration, on a connection of the check's
        // own; once stored, this process's pooled connections to it are closed (a worker's are
        // replaced at their next use: they are keyed by the settings).
        if ((await checkOnItsHost(after)) !== 'usable') throw new ApiError('workspace_root_unusable');
        const updated = await updateSshTarget(ctx.pool, before, after);
        if (updated === 'in_use') throw new ApiError('ssh_target_in_use');
        if (updated === null) throw notFound('SSH target');
        await closeSshConnection(updated.id);
        return view(updated);
      },
    );

    app.delete(
      '/v1/ssh-targets/:id',
      {
        config: { role: 'operator' },
        schema: {
          tags: ['ssh-targets'],
          params: IdParams,
          response: { 204: Type.Null(), ...errorResponses },
        },
      },
      async (request, reply) => {
        const outcome = await deleteSshTarget(ctx.pool, request.params.id);
        if (outcome === 'not_found') throw notFound('SSH target');
        if (outcome === 'in_use') throw new ApiError('ssh_target_in_use');
        await closeSshConnection(request.params.id);
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/v1/ssh-targets',
      {
        config: { role: 'operator' },
        schema: {
          tags: ['ssh-targets'],
          querystring: PageQuery,
          response: { 200: pageOf(SshTargetView), ...errorResponses },
        },
      },
      async (request) =>
        readPage<SshTargetRecord & { exact_at: string }, ReturnType<typeof view>>(
          request.query,
          (page) => listSshTargets(ctx.pool, page),
          (row) => row.id,
          view,
        ),
    );
  };
}
