/** Request and response schemas of the HTTP contract (docs/api.md); they validate input and generate /openapi.json. */
import { Type, type Static } from '@sinclair/typebox';
import { ATTENTION_REASONS } from '../../domain/task-attention';
import { TaskLimits, Usage } from './limit-schemas';
import { Preparation } from './preparation-view';

export const Uuid = Type.String({ format: 'uuid' });
export const IdParams = Type.Object({ id: Uuid });
export type IdParams = Static<typeof IdParams>;

/**
 * The contract's error body, registered once (`app.addSchema`) and referred to by `$ref` from every
 * error response: it validates the answers and is `#/components/schemas/ApiError` in /openapi.json.
 */
export const ApiErrorBody = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String(),
        message: Type.String(),
        recoverable: Type.Boolean(),
        retryAfterMs: Type.Integer(),
        action: Type.String(),
        errorId: Type.String(),
      },
      { additionalProperties: true },
    ),
  },
  {
    $id: 'ApiError',
    description:
      'Every error: `code` (each response lists its codes), `message` for people, `recoverable`, `retryAfterMs` (retry no sooner), `action` (what to do) and `errorId` (in the log); some codes add fields (`reason`, `clash`, `dirtyRepositories`, `sessionId`).',
  },
);
const ErrorResponse = Type.Unsafe<Static<typeof ApiErrorBody>>({ $ref: 'ApiError#' });

export const BranchName = Type.String({ minLength: 1, maxLength: 200 });

export const CreateTaskBody = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 500 }),
    boardId: Type.Optional(Uuid),
    parentTaskId: Type.Optional(Uuid),
    repositories: Type.Array(
      Type.Object(
        {
          repositoryId: Uuid,
          baseBranch: Type.Optional(BranchName),
          checkoutBranch: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 200,
              description:
                "An existing branch to work on as it is. Only where agents run unsandboxed (TWS_AGENT_SANDBOX=none): a sandboxed agent commits only on its task's own branch, so elsewhere this is refused 400 checkout_branch_unsupported; use baseBranch.",
            }),
          ),
        },
        { additionalProperties: false },
      ),
      { maxItems: 20, default: [] },
    ),
    workspace: Type.Optional(
      Type.Object(
        {
          mode: Type.Union([
            Type.Literal('new_workspace'),
            Type.Literal('inherit_parent'),
            Type.Literal('shared_group'),
          ]),
          groupId: Type.Optional(Uuid),
        },
        { additionalProperties: false },
      ),
    ),
    quickChat: Type.Optional(Type.Boolean()),
    /** Its workspace on disk at most; default: the operator's TWS_TASK_DISK_QUOTA. */
    diskQuotaBytes: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);
export type CreateTaskBody = Static<typeof CreateTaskBody>;

const Environment = Type.Object({
  id: Uuid,
  executorType: Type.String(),
  status: Type.String(),
  hostId: Type.String(),
  ownerTaskId: Uuid,
  borrowed: Type.Boolean(),
  sshTargetId: Type.Optional(Uuid),
  /** How its workspace was made ready when it was last made (copied files, the setup's outcome); both null when nothing was asked. */
  preparation: Preparation,
});
const SessionSummary = Type.Object({
  id: Uuid,
  state: Type.String(),
  executorType: Type.String(),
  role: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
});
/** A task in a list: its own row only (one query per page); the full view, environment and sessions included, is GET /v1/tasks/:id. */
export const TaskItem = Type.Object({
  id: Uuid,
  title: Type.String(),
  state: Type.Union([Type.Literal('active'), Type.Literal('archived')]),
  parentTaskId: Type.Union([Uuid, Type.Null()]),
  boardId: Type.Union([Uuid, Type.Null()]),
  workspaceMode: Type.String(),
  groupId: Type.Union([Uuid, Type.Null()]),
  quickChat: Type.Boolean(),
  createdAt: Type.String(),
  /** Its latest merge that is not undone; null before any. */
  merged: Type.Union([Type.Object({ at: Type.String(), operationId: Uuid }), Type.Null()]),
  /** `working` while any session of the task is starting or running, else `idle`. */
  activity: Type.Union([Type.Literal('working'), Type.Literal('idle')]),
  /**
   * Why a person must look, or null: the first that holds of `cleanup_needs_operator` (a cleanup job
   * waits for an operator), `merge_needs_operator`, `merge_conflict` (the latest such merge, none
   * merged since), `restore_conflict` (saved work a launch could not put back, no merge since) and
   * `launch_failed` (the newest session failed, none at work). Ids only: never a path or a branch.
   */
  attention: Type.Union([
    Type.Object({
      reason: Type.Union(ATTENTION_REASONS.map((r) => Type.Literal(r))),
      operationId: Type.Union([Uuid, Type.Null()]),
      sessionId: Type.Union([Uuid, Type.Null()]),
    }),
    Type.Null(),
  ]),
});

/** A task's full view: registered once (`app.addSchema`, client/gateway/openapi-docs.ts), referred to by `$ref` by every answer that has it. */
export const TaskBody = Type.Object(
  {
    ...TaskItem.properties,
    /** Never released for idleness (`POST /v1/tasks/:id/pin`). */
    pinned: Type.Boolean(),
    /** Its workspace's bytes on disk (every file, ignored ones too) as its host last measured them; null before that, or with no workspace. */
    disk: Type.Union([Type.Object({ bytes: Type.Number(), measuredAt: Type.String() }), Type.Null()]),
    /** What its agents may use: each agent by default, all together at most (null: limits off), its disk quota (null: none). */
    limits: TaskLimits,
    /** What the agents of its workspace use together now (memory, processes), as its host last read it; null when none runs. */
    usage: Type.Union([Usage, Type.Null()]),
    repositories: Type.Array(
      Type.Object({
        repositoryId: Uuid,
        baseBranch: Type.String(),
        checkoutBranch: Type.Union([Type.String(), Type.Null()]),
      }),
    ),
    environment: Type.Union([Environment, Type.Null()]),
    sessions: Type.Array(SessionSummary),
  },
  { $id: 'Task' },
);
export const Task = Type.Unsafe<Static<typeof TaskBody>>({ $ref: 'Task#' });

/** Where an operator sees the run behind an answer: the Temporal UI (TWS_TEMPORAL_UI_URL); absent when no UI is known. */
export const Links = Type.Object({ temporal: Type.Optional(Type.String()) });

export const errorResponses = {
  400: ErrorResponse,
  401: ErrorResponse,
  403: ErrorResponse,
  404: ErrorResponse,
  409: ErrorResponse,
  413: ErrorResponse,
  414: ErrorResponse,
  415: ErrorResponse,
  431: ErrorResponse,
  500: ErrorResponse,
  503: ErrorResponse,
};

/** A launch or a resume may also meet a low disk where it materializes: `507 host_disk_low` [R6.11]. */
export const launchErrorResponses = { ...errorResponses, 507: ErrorResponse };
