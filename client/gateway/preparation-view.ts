/**
 * What a launch that made a workspace did to make it ready (db/workspace-preparations.ts), as its
 * answer and its session's view say it: `setup` (the first repository whose setup did not succeed,
 * else the last that ran; null when none ran) and `copied` (every repository's copies, paths from
 * the workspace; null when the launch made no workspace). Never a path outside the workspace.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { PreparationRow } from '../../db/workspace-preparations';

/** Registered once (`app.addSchema`, client/gateway/openapi-docs.ts) and referred to by `$ref` where an answer has it. */
export const SetupOutcomeBody = Type.Object(
  {
    status: Type.Union([
      Type.Literal('succeeded'),
      Type.Literal('failed'),
      Type.Literal('timed_out'),
      Type.Literal('not_started'),
    ]),
    exitCode: Type.Union([Type.Integer(), Type.Null()]),
    signal: Type.Union([Type.String(), Type.Null()]),
    repositoryId: Type.String(),
  },
  { $id: 'SetupOutcome' },
);
export const CopyOutcomeBody = Type.Object(
  {
    files: Type.Array(Type.String()),
    skipped: Type.Array(Type.Object({ path: Type.String(), reason: Type.String() })),
  },
  { $id: 'CopyOutcome' },
);

/** Whether a host can run `container` agents (GET /v1/hosts, /readyz); `reason` when not. Shared like the two above. */
export const ContainersStatusBody = Type.Object(
  {
    available: Type.Boolean(),
    engine: Type.Union([Type.String(), Type.Null()]),
    reason: Type.Optional(Type.String()),
  },
  { $id: 'ContainersStatus' },
);
export const ContainersStatus = Type.Unsafe<Static<typeof ContainersStatusBody>>({ $ref: 'ContainersStatus#' });

export const SetupView = Type.Union([
  Type.Unsafe<Static<typeof SetupOutcomeBody>>({ $ref: 'SetupOutcome#' }),
  Type.Null(),
]);
export const CopiedView = Type.Union([
  Type.Unsafe<Static<typeof CopyOutcomeBody>>({ $ref: 'CopyOutcome#' }),
  Type.Null(),
]);

/** A session's view of it: both at once, shared by every answer that shows a session. */
export const PreparationBody = Type.Object({ setup: SetupView, copied: CopiedView }, { $id: 'WorkspacePreparation' });
export const Preparation = Type.Unsafe<Static<typeof PreparationBody>>({ $ref: 'WorkspacePreparation#' });

export function preparationView(rows: PreparationRow[]) {
  if (rows.length === 0) return { setup: null, copied: null };
  const ran = rows.filter((r) => r.setup_status !== null);
  const shown = ran.find((r) => r.setup_status !== 'succeeded') ?? ran[ran.length - 1];
  return {
    setup: shown
      ? {
          status: shown.setup_status!,
          exitCode: shown.exit_code,
          signal: shown.signal,
          repositoryId: shown.repository_id,
        }
      : null,
    copied: { files: rows.flatMap((r) => r.copied), skipped: rows.flatMap((r) => r.skipped) },
  };
}
