/**
 * POST /v1/ssh-targets and GET /v1/ssh-targets (operator): the machines the SSH executor works on.
 * A target is stored only after one check over SSH from the host that holds its key (`hostId`):
 * its pinned host key, this service's key, a usable workspace root. No answer shows the key's path,
 * the key, or the known_hosts lines; a refusal says what failed in a word.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { isUniqueViolation } from '../../../db/pool';
import { insertSshTarget, listSshTargets, type SshTargetRecord } from '../../../db/ssh-targets';
import { hostLiveness } from '../../../db/hosts';
import { SshRefusal, type SshTarget } from '../../../ssh/connection';
import { checkSshTargetOn } from '../../engine-hosts';
import { parseKnownHosts, pinnedHostKeys } from '../../../ssh/known-hosts';
import { checkSshTarget } from '../../../ssh/target-check';
import { ApiError, badRequest, refusalError } from '../api-error';
import type { GatewayContext } from '../context';
import { PageQueryFields, pageOf, readPage } from '../pagination';
import { errorResponses, Uuid } from '../schemas';

/** An absolute path without NUL or line breaks (the rest is checked in the handler). */
const AbsolutePath = Type.String({ minLength: 1, maxLength: 4096, pattern: '^/[^\\u0000\\n\\r]*$' });

const CreateSshTargetBody = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,62}$' }),
    // A DNS name or an IP literal (IPv6 without brackets); never a space, an option or a user@.
    host: Type.String({
      maxLength: 253,
      pattern:
        '^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\\.?|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$',
    }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    user: Type.String({ pattern: '^[a-z_][a-z0-9_.-]{0,31}$' }),
    /** On this gateway's host; the key never leaves it. */
    privateKeyPath: AbsolutePath,
    /** known_hosts lines pinning the target's host key(s). */
    knownHosts: Type.String({ minLength: 1, maxLength: 64 * 1024 }),
    /** Absolute, on the target. */
    workspaceRoot: AbsolutePath,
    /** The service host that holds the key and talks to the target (it must hold the repositories of the tasks that use it); this gateway's own by default. */
    hostId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' })),
  },
  { additionalProperties: false },
);

const SshTargetView = Type.Object({
  id: Uuid,
  name: Type.String(),
  host: Type.String(),
  port: Type.Integer(),
  user: Type.String(),
  workspaceRoot: Type.String(),
  hostKeyTypes: Type.Array(Type.String()),
  hostId: Type.String(),
  createdAt: Type.String(),
});
const PageQuery = Type.Object(PageQueryFields, { additionalProperties: false });

const view = (t: SshTargetRecord) => ({
  id: t.id,
  name: t.name,
  host: t.host,
  port: t.port,
  user: t.user,
  workspaceRoot: t.workspaceRoot,
  hostKeyTypes: pinnedHostKeys(parseKnownHosts(t.knownHosts), t.host, t.port).keyTypes,
  hostId: t.hostId,
  createdAt: t.createdAt,
});

/** The workspace root as stored: one spelling per folder (no `.`, `//` or trailing slash); `..` is refused, never resolved. */
function workspaceRootOf(given: string): string {
  if (given.split('/').includes('..')) throw badRequest('workspaceRoot may not contain "..".');
  const normal = path.posix.normalize(given);
  return normal.length > 1 ? normal.replace(/\/$/, '') : normal;
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
        const body = request.body;
        if (body.host.includes(':') && !net.isIPv6(body.host))
          throw badRequest('host must be a host name or an IP address.');
        if (parseKnownHosts(body.knownHosts).length === 0)
          throw badRequest('knownHosts has no entry this service can pin (host keytype base64).');
        const target = {
          id: randomUUID(),
          name: body.name,
          host: body.host,
          port: body.port ?? 22,
          user: body.user,
          privateKeyPath: body.privateKeyPath,
          knownHosts: body.knownHosts,
          workspaceRoot: workspaceRootOf(body.workspaceRoot),
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
