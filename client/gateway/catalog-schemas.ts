/** The catalogue's request and answer schemas: repositories and boards (routes/catalog.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { REBUILDABLE_LIMITS } from '../../domain/rebuildable';
import { REPOSITORY_NAME_PATTERN } from '../../domain/refs';
import { BranchName, Uuid } from './schemas';

/**
 * Ignored files a release may leave out of its save because they are rebuilt (domain/rebuildable.ts):
 * `name/` a folder at any depth, a name (`*` any characters), or a path from the top (`**` any depth).
 */
const Rebuildable = Type.Array(Type.String({ minLength: 1, maxLength: REBUILDABLE_LIMITS.length }), {
  maxItems: REBUILDABLE_LIMITS.patterns,
});

export const CreateRepositoryBody = Type.Object(
  {
    name: Type.String({ pattern: REPOSITORY_NAME_PATTERN }),
    path: Type.String({ minLength: 1, maxLength: 4096 }),
    defaultBranch: Type.Optional(BranchName),
    /** The host that holds the path (default: the only live host). */
    hostId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._-]+$' })),
    rebuildable: Type.Optional(Rebuildable),
  },
  { additionalProperties: false },
);
export type CreateRepositoryBody = Static<typeof CreateRepositoryBody>;
/** `PATCH /v1/repositories/:id`: what may change after registration. */
export const PatchRepositoryBody = Type.Object(
  { rebuildable: Type.Union([Rebuildable, Type.Null()]) },
  { additionalProperties: false },
);
export const Repository = Type.Object({
  id: Uuid,
  name: Type.String(),
  defaultBranch: Type.String(),
  /** The ignored files a release leaves out of its save as rebuilt (the default list unless the repository set its own). */
  rebuildable: Type.Array(Type.String()),
  /** True when `rebuildable` is the default list. */
  rebuildableDefault: Type.Boolean(),
});

export const CreateBoardBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
export type CreateBoardBody = Static<typeof CreateBoardBody>;
export const Board = Type.Object({ id: Uuid, name: Type.String() });
