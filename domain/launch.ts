/** The shapes a launch passes between gateway, workflow and activities. */
import type { AgentLimits } from './limits';
import type { ExecutorType, RequestedExecutor } from './admission';
import type { SessionRoleName } from './session';
import { taskRefFolder } from './task-layout';

export interface LaunchRequest {
  sessionId: string;
  taskId: string;
  executorType: RequestedExecutor;
  agentProfile: string;
  /** The argv the agent runs, resolved from the profile by the gateway. */
  command: string[];
  /** Variables for the agent: the profile's, then the request's (validated by the gateway). */
  env?: Record<string, string>;
  /** Written to a file in the execution's run folder, its path in TWS_PROMPT_FILE; given as its profile reads it. */
  prompt?: string | null;
  name: string | null;
  /** The host a new environment is materialized on. */
  hostId: string;
  /** `ssh`: the target a new workspace is made on (an attach uses the environment's own). */
  sshTargetId?: string | null;
  /** What its agents may use, resolved by the gateway (defaults, profile, request); absent in older requests: the defaults. */
  limits?: AgentLimits;
  /** `container`: the image its agents run in, resolved by the gateway (profile, request, default). */
  image?: string;
  /**
   * Set when the workflow was started on `hostId`'s queue (`<sharedQueue>-host-<hostId>`): that
   * host's steps then run as its local activities. Part of the input, so replay decides the same.
   */
  sharedQueue?: string;
}

/** Where a launch or resume workflow runs: on the queue of `hostId`, derived from `sharedQueue`. */
export interface StartedOn {
  sharedQueue: string;
  hostId: string;
}

export interface SlotPlan {
  repositoryId: string;
  repositoryName: string;
  sourcePath: string;
  /** The commit a checkout at sourcePath must hold to be the registered repository; null or absent (plans admitted before): not recorded. */
  sourceRootCommit?: string | null;
  baseBranch: string;
  branch: string;
  branchSlug: string;
  /** Create the branch from the base branch (false: check out an existing branch). */
  createBranch: boolean;
  worktreePath: string;
  position: number;
  /** For attach: what the inventory records. */
  recorded: { worktreeId: string | null; worktreePath: string | null; worktreeBranch: string | null } | null;
}

export interface LaunchPlan {
  role: SessionRoleName;
  sessionId: string;
  taskId: string;
  environmentId: string;
  /** The task that owns the environment (differs from taskId when borrowed). */
  environmentTaskId: string;
  executorType: ExecutorType;
  hostId: string;
  workspacePath: string;
  taskFolder: string;
  slots: SlotPlan[];
  /** Set for an executor transition: the environment is rebound only if it is still what admission saw [R3]. */
  transition?: { fromExecutorType: ExecutorType; ownershipGeneration: number };
  /** What it does with its workspace (domain/launch-plan.ts `decideWorkspaceSteps`); absent in plans admitted before. */
  workspace?: { validate: boolean; createWorktrees: boolean; remote?: boolean };
  /** `ssh`: the target holding the workspace (paths of the plan are on it). */
  sshTargetId?: string | null;
  /** What the session's agents may use; absent in plans admitted before: the defaults. */
  limits?: AgentLimits;
  /** `container`: the image the session's agents run in. */
  image?: string;
  /** The session's agent profile: its start reads how it takes its prompt and its credentials; absent in plans admitted before. */
  agentProfile?: string;
}

/** What materialization made, so a failed launch removes exactly that and nothing else. */
export interface MaterializedSlot {
  repositoryId: string;
  worktreePath: string;
  /** null for a remote clone: no host worktree id. */
  worktreeId: string | null;
  branch: string;
  headCommit: string;
  createdBranch: boolean;
  /** False when an existing registration at the slot path was adopted: an undo never removes it. */
  createdWorktree: boolean;
}

export interface LaunchResult {
  sessionId: string;
  taskEnvironmentId: string;
  role: SessionRoleName;
  state: 'running' | 'exited';
  executionId: string;
}

/**
 * The plan of a first launch as its inventory now records it (published): each slot with the
 * worktree id git gave it, so that its agent's start finds the registration by its id as an
 * attach does. Slots the list does not name stay as they are.
 */
export function publishedPlan(
  plan: LaunchPlan,
  made: { repositoryId: string; worktreeId: string | null; worktreePath: string; branch: string }[],
): LaunchPlan {
  return {
    ...plan,
    slots: plan.slots.map((slot) => {
      const m = made.find((x) => x.repositoryId === slot.repositoryId && x.worktreePath === slot.worktreePath);
      return m?.worktreeId
        ? { ...slot, recorded: { worktreeId: m.worktreeId, worktreePath: m.worktreePath, worktreeBranch: m.branch } }
        : slot;
    }),
  };
}

/**
 * The repositories' git folders of a plan's agents (a worktree's commits are written there), each
 * with the worktree its task store is keyed by and the ref folder its agent moves.
 */
export function gitSlotsOf(plan: LaunchPlan) {
  return plan.slots.map((slot) => ({
    commonDir: `${slot.sourcePath}/.git`,
    worktreePath: slot.worktreePath,
    refFolder: taskRefFolder(slot.branch),
    worktreeId: slot.recorded?.worktreeId ?? null,
  }));
}

/** What starting the agent of a plan needs: its own execution id, the plan's workspace as working directory. */
export function agentStartOf(
  plan: LaunchPlan,
  command: string[],
  executionId: string,
  env: Record<string, string> = {},
  prompt: string | null = null,
) {
  return {
    executionId,
    sessionId: plan.sessionId,
    taskId: plan.taskId,
    environmentId: plan.environmentId,
    environmentTaskId: plan.environmentTaskId,
    cwd: plan.workspacePath,
    command,
    env,
    prompt,
    gitSlots: gitSlotsOf(plan),
    sshTargetId: plan.sshTargetId ?? null,
    ...(plan.limits ? { limits: plan.limits } : {}),
    executorType: plan.executorType,
    ...(plan.image ? { image: plan.image } : {}),
    ...(plan.agentProfile ? { agentProfile: plan.agentProfile } : {}),
  };
}

/** Why attaching to a recorded workspace was refused (R1.2): host and remote validation alike. */
export type ValidationProblem =
  | 'identity_missing'
  | 'not_a_directory'
  | 'not_registered'
  | 'branch_mismatch'
  | 'marker_mismatch'
  | 'not_a_checkout'
  | 'repository_mismatch';
