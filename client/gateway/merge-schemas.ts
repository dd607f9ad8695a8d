/** The merge resource [R8.3], registered once (client/gateway/openapi-docs.ts) and referred to by every answer that has it. */
import { Type, type Static } from '@sinclair/typebox';
import { Links, Uuid } from './schemas';

/** A string of one of these values, as one `enum` (a union of literals writes each as a schema of its own). */
export const OneOf = <T extends string>(values: readonly T[]) => Type.Unsafe<T>({ type: 'string', enum: [...values] });

const Commit = Type.Union([Type.String(), Type.Null()]);

export const MergeBody = Type.Object(
  {
    operationId: Uuid,
    taskId: Uuid,
    strategy: Type.String(),
    state: OneOf(['running', 'merged', 'refused', 'undone', 'needs_operator'] as const),
    repositories: Type.Array(
      Type.Object({
        repositoryId: Uuid,
        baseBranch: Type.String(),
        before: Commit,
        after: Commit,
        /** With `push: true`: whether the base reached the repository's remote. */
        pushed: Type.Optional(Type.Boolean()),
      }),
    ),
    /** A refused merge's error: the error body's fields. */
    error: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    createdAt: Type.String(),
    finishedAt: Type.Union([Type.String(), Type.Null()]),
    undoneAt: Type.Union([Type.String(), Type.Null()]),
    links: Links,
  },
  { $id: 'Merge' },
);

export const Merge = Type.Unsafe<Static<typeof MergeBody>>({ $ref: 'Merge#' });
