/** The SSH targets' request and answer schemas (routes/ssh-targets.ts): registration, change, view. */
import { Type } from '@sinclair/typebox';
import { parseKnownHosts, pinnedHostKeys } from '../../ssh/known-hosts';
import type { SshTargetRecord } from '../../db/ssh-targets';
import { PageQueryFields } from './pagination';
import { Uuid } from './schemas';

/** An absolute path without NUL or line breaks (the rest is checked in the handler). */
const AbsolutePath = Type.String({ minLength: 1, maxLength: 4096, pattern: '^/[^\\u0000\\n\\r]*$' });

export const CreateSshTargetBody = Type.Object(
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

/**
 * `PATCH /v1/ssh-targets/:id`: what may change (a host key that changed, a machine renumbered, a key
 * rotated); a field left out stays. The name, the id and the host that holds the key stay.
 */
export const PatchSshTargetBody = Type.Object(
  {
    host: Type.Optional(CreateSshTargetBody.properties.host),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    user: Type.Optional(CreateSshTargetBody.properties.user),
    privateKeyPath: Type.Optional(AbsolutePath),
    knownHosts: Type.Optional(CreateSshTargetBody.properties.knownHosts),
    workspaceRoot: Type.Optional(AbsolutePath),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const SshTargetView = Type.Object({
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
export const PageQuery = Type.Object(PageQueryFields, { additionalProperties: false });

export const view = (t: SshTargetRecord) => ({
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
