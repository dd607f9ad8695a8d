/** Request and response schemas of the HTTP contract (docs/api.md); they validate input and generate /openapi.json. */
import { Type, type Static } from '@sinclair/typebox';
import { ATTENTION_REASONS } from '../../domain/task-attention';
import { Limits, LimitsBody, TaskLimits, Usage } from './limit-schemas';
import { CopiedView, Preparation, SetupView } from './preparation-view';

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

export const LaunchBody = Type.Object(
  {
    // Only the executors this service runs: another (`sandbox`) is a 400 that lists them. `container`
    // where the operator configured an engine (TWS_CONTAINER_ENGINE); else `executor_unavailable` (400).
    executorType: Type.Union([
      Type.Literal('worktree'),
      Type.Literal('local'),
      Type.Literal('ssh'),
      Type.Literal('container'),
    ]),
    agentProfile: Type.String({ minLength: 1, maxLength: 100 }),
    command: Type.Optional(Type.Array(Type.String({ maxLength: 10_000 }), { minItems: 1, maxItems: 1000 })),
    /** Appended to the profile's command (or the shell profile's `command`). */
    args: Type.Optional(Type.Array(Type.String({ maxLength: 10_000 }), { maxItems: 1000 })),
    /** Variables for the agent: names `^[A-Z_][A-Z0-9_]*$`, `TWS_*` reserved. */
    env: Type.Optional(
      Type.Record(Type.String({ maxLength: 200 }), Type.String({ maxLength: 10_000 }), { maxProperties: 100 }),
    ),
    /** Given as the profile's agent reads it (an argument, stdin or a file); always also in the file TWS_PROMPT_FILE names. */
    prompt: Type.Optional(Type.String({ maxLength: 512 * 1024 })),
    name: Type.Optional(Type.String({ maxLength: 200 })),
    /** `ssh`: the target (`POST /v1/ssh-targets`) to make the workspace on; without it, the one the task's workspace is on. */
    sshTargetId: Type.Optional(Uuid),
    /** What the agent may use, within the operator's maximum (the rest: its profile's, else the defaults). */
    limits: Type.Optional(LimitsBody),
    /** `container`: the image its agents run in, one the operator allows (TWS_CONTAINER_IMAGES); default: its profile's, else TWS_CONTAINER_IMAGE. */
    containerImage: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  },
  { additionalProperties: false },
);
export type LaunchBody = Static<typeof LaunchBody>;
/** A resume may give its run more: args appended to the session's command, env over the session's, a prompt. */
export const ResumeBody = Type.Object(
  {
    args: LaunchBody.properties.args,
    env: LaunchBody.properties.env,
    prompt: LaunchBody.properties.prompt,
  },
  { additionalProperties: false },
);
export const LaunchResponse = Type.Object({
  sessionId: Uuid,
  taskEnvironmentId: Uuid,
  role: Type.String(),
  state: Type.String(),
  executionId: Uuid,
  links: Links,
  /** When this launch made the workspace: its repositories' setup outcome and copied files (null otherwise). */
  setup: Type.Optional(SetupView),
  copied: Type.Optional(CopiedView),
});

/** A launch or resume answered once admitted (`Prefer: respond-async`): the session then tells the outcome. */
export const AcceptedLaunch = Type.Object({
  sessionId: Uuid,
  state: Type.String(),
  taskEnvironmentId: Type.Union([Uuid, Type.Null()]),
  role: Type.Union([Type.String(), Type.Null()]),
  links: Links,
});

export const Session = Type.Object({
  id: Uuid,
  taskId: Uuid,
  state: Type.String(),
  taskEnvironmentId: Type.Union([Uuid, Type.Null()]),
  executorType: Type.String(),
  agentProfile: Type.String(),
  role: Type.Union([Type.String(), Type.Null()]),
  name: Type.Union([Type.String(), Type.Null()]),
  execution: Type.Union([
    Type.Object({
      id: Uuid,
      pid: Type.Integer(),
      hostId: Type.String(),
      startedAt: Type.String(),
      endedAt: Type.Union([Type.String(), Type.Null()]),
      exitCode: Type.Union([Type.Integer(), Type.Null()]),
      signal: Type.Union([Type.String(), Type.Null()]),
      /** running, exited, stopped or vanished; `status` is the same (kept for existing clients). */
      state: Type.String(),
      status: Type.String(),
      /** `oom_killed` (its memory limit), `disk_quota` (its task's disk quota) or `disk_low` (its host's free space) when a limit ended it; null when none did. */
      outcome: Type.Union([Type.String(), Type.Null()]),
    }),
    Type.Null(),
  ]),
  /** What its agents may use; null when the operator runs agents without limits. */
  limits: Type.Union([Limits, Type.Null()]),
  /** What the agents of its workspace use together now (the task view's `usage`); null when none runs, or in lists. */
  usage: Type.Union([Usage, Type.Null()]),
  /** The run that last admitted the session (its launch, or its latest admitted resume). */
  links: Links,
  /**
   * What its launch did with the work an idle release saved [R6.10]: `applied`, `conflict` (the
   * branch moved since: the worktree is on the clean branch, and `restoreConflictRefs` are the
   * saved refs to apply by hand), or null (nothing to restore).
   */
  restore: Type.Optional(Type.Union([Type.Literal('applied'), Type.Literal('conflict'), Type.Null()])),
  restoreConflictRefs: Type.Optional(Type.Array(Type.String())),
  /** What its launch did to make the workspace it made ready: its setup's outcome and the files it copied (each null: none). */
  preparation: Type.Optional(Preparation),
  /** A first launch that left no row: why (its run's typed refusal, or launch_cancelled). */
  error: Type.Optional(
    Type.Object({ code: Type.String(), message: Type.String(), reason: Type.Optional(Type.String()) }),
  ),
});

export const Workspace = Type.Object({
  taskEnvironmentId: Type.Union([Uuid, Type.Null()]),
  executorType: Type.String(),
  /** Null while the environment has no workspace (released, preparing, failed). */
  workspacePath: Type.Union([Type.String(), Type.Null()]),
  repositories: Type.Array(
    Type.Object({ repositoryId: Uuid, worktreePath: Type.String(), branch: Type.Union([Type.String(), Type.Null()]) }),
  ),
  source: Type.Union([
    Type.Literal('environment'),
    Type.Literal('released'),
    Type.Literal('preparing'),
    Type.Literal('failed'),
    Type.Literal('legacy_fallback'),
  ]),
});

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
