/** The schemas of launches, resumes and sessions (docs/api.md): what a launch takes and answers, a session's view and its workspace. */
import { Type, type Static } from '@sinclair/typebox';
import { Limits, LimitsBody, Usage } from './limit-schemas';
import { CopiedView, Preparation, SetupView } from './preparation-view';
import { Links, Uuid } from './schemas';

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
