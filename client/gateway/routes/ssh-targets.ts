/**
 * POST /v1/ssh-targets and GET /v1/ssh-targets (operator): the machines the SSH executor works on.
 * A target is stored only after one check over SSH from this host (the host that holds its key):
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
import { SshRefusal } from '../../../ssh/connection';
import { parseKnownHosts, pinnedHostKeys } from '../../../ssh/known-hosts';
import { checkSshTarget } from '../../../ssh/target-check';
import { ApiError, badRequest } from '../api-error';
import type { GatewayContext } from '../context';
import { PageQueryFields, pageOf, readPage } from '../pagination';
import { errorResponses, Uuid } from '../schemas';

/** An absolute path without NUL or line breaks (the rest is checked in the handler). */
const AbsolutePath = Type.String({ minLength: 1, maxLength: 4096, pattern: '^/[^\\u0000\\n\\r]*$' });

const CreateSshTargetBody = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,62}$' }),
    // A DNS name or an IP literal (IPv6 without brackets); never a space, an option or a user@.
    host: Type.String({ maxLength: 253, pattern: '^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\\.?|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$' }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    user: Type.String({ pattern: '^[a-z_][a-z0-9_.-]{0,31}$' }),
    /** On this gateway's host; the key never leaves it. */
    privateKeyPath: AbsolutePath,
    /** known_hosts lines pinning the target's host key(s). */
    knownHosts: Type.String({ minLength: 1, maxLength: 64 * 1024 }),
    /** Absolute, on the target. */
    workspaceRoot: AbsolutePath,
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
  return async (app) => {
    app.post(
      '/v1/ssh-targets',
      { config: { role: 'operator' }, schema: { tags: ['ssh-targets'], body: CreateSshTargetBody, response: { 201: SshTargetView, ...errorResponses } } },
      async (request, reply) => {
        const body = request.body;
        if (body.host.includes(':') && !net.isIPv6(body.host)) throw badRequest('host must be a host name or an IP address.');
        if (parseKnownHosts(body.knownHosts).length === 0) throw badRequest('knownHosts has no entry this service can pin (host keytype base64).');
        const target = {
          id: randomUUID(),
          name: body.name,
          host: body.host,
          port: body.port ?? 22,
          user: body.user,
          privateKeyPath: body.privateKeyPath,
          knownHosts: body.knownHosts,
          workspaceRoot: workspaceRootOf(body.workspaceRoot),
          hostId: ctx.config.hostId,
        };
        let checked: Awaited<ReturnType<typeof checkSshTarget>>;
        try {
          checked = await checkSshTarget(target);
        } catch (err) {
          if (err instanceof SshRefusal) throw new ApiError(err.code, undefined, { reason: err.reason });
          throw err;
        }
        if (checked !== 'usable') {
          throw new ApiError('invalid_request', 'workspaceRoot is not an existing directory (by its real path) the user can write to.', { reason: checked });
        }
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
      { config: { role: 'operator' }, schema: { tags: ['ssh-targets'], querystring: PageQuery, response: { 200: pageOf(SshTargetView), ...errorResponses } } },
      async (request) => readPage<SshTargetRecord & { exact_at: string }, ReturnType<typeof view>>(request.query, (page) => listSshTargets(ctx.pool, page), (row) => row.id, view),
    );
  };
}
