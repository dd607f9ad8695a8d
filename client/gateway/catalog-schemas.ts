/** The catalogue's request and answer schemas: repositories and boards (routes/catalog.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { MERGE_STRATEGIES } from '../../domain/merge';
import { REBUILDABLE_LIMITS } from '../../domain/rebuildable';
import { REMOTE_MAX_LENGTH } from '../../domain/remote';
import { REPOSITORY_NAME_PATTERN } from '../../domain/refs';
import { COPY_FILES_LIMITS, SETUP_LIMITS } from '../../domain/workspace-setup';
import { BranchName, Uuid } from './schemas';

/**
 * Ignored files a release may leave out of its save because they are rebuilt (domain/rebuildable.ts):
 * `name/` a folder at any depth, a name (`*` any characters), or a path from the top (`**` any depth).
 */
const Rebuildable = Type.Array(Type.String({ minLength: 1, maxLength: REBUILDABLE_LIMITS.length }), {
  maxItems: REBUILDABLE_LIMITS.patterns,
});

/**
 * Files copied from the source checkout into each new worktree (domain/workspace-setup.ts): paths
 * from the checkout's top, `*` any characters within a segment, `**` any number of segments.
 */
const CopyFiles = Type.Array(Type.String({ minLength: 1, maxLength: COPY_FILES_LIMITS.length }), {
  maxItems: COPY_FILES_LIMITS.patterns,
});
/** The argv of a command run once in each new workspace before its first agent starts (no shell). */
const Setup = Type.Array(Type.String({ maxLength: SETUP_LIMITS.length }), { maxItems: SETUP_LIMITS.items });
/** What a failing setup does: `warn`, the launch goes on and says so; `refuse`, the launch fails whole and is undone. */
const SetupFailure = Type.Union([Type.Literal('warn'), Type.Literal('refuse')]);
/** Where task branches are pushed: a remote name of the repository, or a file://, ssh:// or https:// URL without credentials. */
const Remote = Type.String({ minLength: 1, maxLength: REMOTE_MAX_LENGTH });
/** The merge strategies the repository allows. */
const MergeStrategies = Type.Array(Type.Union(MERGE_STRATEGIES.map((s) => Type.Literal(s))), {
  minItems: 1,
  maxItems: 16,
});

export const CreateRepositoryBody = Type.Object(
  {
    name: Type.String({ pattern: REPOSITORY_NAME_PATTERN }),
    path: Type.String({ minLength: 1, maxLength: 4096 }),
    defaultBranch: Type.Optional(BranchName),
    /** The host that holds the path (default: the only live host). */
    hostId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._-]+$' })),
    rebuildable: Type.Optional(Rebuildable),
    setup: Type.Optional(Setup),
    copyFiles: Type.Optional(CopyFiles),
    /** Default `warn`. */
    setupFailure: Type.Optional(SetupFailure),
    /** Default none. */
    remote: Type.Optional(Remote),
    /** Default all. */
    mergeStrategies: Type.Optional(MergeStrategies),
  },
  { additionalProperties: false },
);
export type CreateRepositoryBody = Static<typeof CreateRepositoryBody>;
/**
 * `PATCH /v1/repositories/:id`: what may change after registration; a field left out stays as it is.
 * `rebuildable: null` is the default list again; `setup: null` and `copyFiles: null` remove them.
 */
export const PatchRepositoryBody = Type.Object(
  {
    rebuildable: Type.Optional(Type.Union([Rebuildable, Type.Null()])),
    setup: Type.Optional(Type.Union([Setup, Type.Null()])),
    copyFiles: Type.Optional(Type.Union([CopyFiles, Type.Null()])),
    setupFailure: Type.Optional(SetupFailure),
    /** null: none. */
    remote: Type.Optional(Type.Union([Remote, Type.Null()])),
    /** null: all strategies again. */
    mergeStrategies: Type.Optional(Type.Union([MergeStrategies, Type.Null()])),
  },
  { additionalProperties: false },
);
export type PatchRepositoryBody = Static<typeof PatchRepositoryBody>;
export const Repository = Type.Object({
  id: Uuid,
  name: Type.String(),
  defaultBranch: Type.String(),
  /** The ignored files a release leaves out of its save as rebuilt (the default list unless the repository set its own). */
  rebuildable: Type.Array(Type.String()),
  /** True when `rebuildable` is the default list. */
  rebuildableDefault: Type.Boolean(),
  /** The argv run once in each new workspace before its first agent starts; null when there is none. */
  setup: Type.Union([Type.Array(Type.String()), Type.Null()]),
  /** The patterns of files copied from the source checkout into each new worktree (empty: none). */
  copyFiles: Type.Array(Type.String()),
  setupFailure: SetupFailure,
  /** Where its task branches are pushed (a remote name or a URL, never with credentials); null: none. */
  remote: Type.Union([Type.String(), Type.Null()]),
  /** The merge strategies it allows; null: all of them. */
  mergeStrategies: Type.Union([Type.Array(Type.String()), Type.Null()]),
});

export const CreateBoardBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
export type CreateBoardBody = Static<typeof CreateBoardBody>;
export const Board = Type.Object({ id: Uuid, name: Type.String() });
