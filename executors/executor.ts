/**
 * The executor interface: where a task's workspace and its agents live (a worktree on this host,
 * the source checkout itself, a clone on an SSH target), as the operations every executor
 * implements. The activities and the gateway call these and never ask which executor it is;
 * domain/launch-plan.ts decides which one a plan or a record is (`executorOfPlan`,
 * `executorOfRecord`), and executors/registry.ts holds the one registration list.
 *
 * Its shape follows Kandev's `ExecutorBackend` (a small required interface and a registry), with
 * what is typed there as per-runtime metadata typed here per executor: a plan carries its
 * executor's own fields (the target of an `ssh` plan), and each record names the place it is on.
 */
import type { ExecutionRow, ExecutionStatus } from '../db/executions';
import type { Db } from '../db/pool';
import type { ExecutorType } from '../domain/admission';
import type { LogSource } from '../domain/agent-log';
import type { CleanupTrigger } from '../domain/cleanup';
import type { SnapshotProcess, SnapshotWorktree, WorktreeOutcome } from '../domain/cleanup-snapshot';
import type { GitStatusObservation, GitStatusTarget } from '../domain/git-status';
import type { LaunchPlan, MaterializedSlot } from '../domain/launch';
import type { TaskRepositorySource } from '../domain/merge';
import type { StartAgentInput, StartedAgent } from './agent-start';

export type ExecutorKind = ExecutorType;

/** The workspace of a launch plan: made, undone exactly, or validated read-only [R1.2]. */
export interface WorkspaceOperations {
  /** Makes the plan's worktrees or clones (a failure removes what it made before it fails). */
  materialize(plan: LaunchPlan): Promise<MaterializedSlot[]>;
  /** Removes exactly what a launch made, never with force; what cannot be removed is kept and said. */
  discard(plan: LaunchPlan, made: MaterializedSlot[]): Promise<void>;
  /** Read-only: refuses `workspace_reuse_unsafe` (naming the problem) when the workspace is not what the records say. */
  validate(plan: LaunchPlan): Promise<void>;
}

/** What the caller of a start writes in the transaction that records it (activities/launch-agent.ts). */
export interface StartHooks {
  /**
   * Before the spawn, under the session's start lock: one agent per session. Answers
   * this start's own execution when another run of the same step recorded it meanwhile (the step
   * run twice at once, as after an engine restart): then nothing is started, that one is answered.
   */
  beforeStart(client: Db): Promise<ExecutionRow | null>;
  /** Rows that exist exactly when the agent started (co-residency). */
  recordWithStart?: (client: Db) => Promise<void>;
  /** What follows the recorded start (the session's move); not called when the agent was recorded before. */
  afterRecord?: (client: Db) => Promise<void>;
}

/** The recorded agent a stop acts on: its identity on its place (pid AND start time) and its log. */
export type RecordedAgent = Pick<ExecutionRow, 'id' | 'pid' | 'process_start_time' | 'log_path' | 'ssh_target_id'>;

/** Agents: started detached, stopped by their recorded identity, their logs read, their ends found after a restart. */
export interface AgentOperations {
  startAgent(input: StartAgentInput, hooks: StartHooks): Promise<StartedAgent>;
  /** Stops a running recorded agent; `vanished` when its process is gone with no outcome. Throws when it would not stop. */
  stopAgent(agent: RecordedAgent): Promise<ExecutionStatus>;
  /** The agent's log (only one of this place's run logs: never a file elsewhere on anyone's word). */
  openLog(place: { sshTargetId?: string | null }, logPath: string): Promise<LogSource>;
  /** Kandev's "recover after a restart": this host's agents recorded running whose process is gone get their outcome. */
  recoverAgents(hostId: string): Promise<{ alive: number; exited: number; vanished: number }>;
}

/** Git status of a workspace, read where it is [R1.5]. */
export interface GitOperations {
  readGitStatus(target: GitStatusTarget): Promise<GitStatusObservation[]>;
  /**
   * Before a task is diffed or merged [R8.7]: its branch's commits brought into the host
   * repository (an agent's store, a remote clone's branch), and whether its workspace holds
   * uncommitted work (a workspace that cannot be read counts as holding some).
   */
  bringBranchHome(source: TaskRepositorySource): Promise<{ dirty: boolean }>;
}

/** One worktree's or clone's audited removal, as a cleanup attempt asks it. */
export interface RemovalRequest {
  worktree: SnapshotWorktree;
  ownerTaskId: string;
  /** The folder whose marker vouches for it (a host worktree's own task folder). */
  taskFolder: string | null;
  /** What to do with uncommitted work: keep the worktree (archive, no consent) or save it on a hidden ref, then remove. */
  dirty: 'keep' | 'save';
  /** The cleanup that removes it: a release's save gets a ref of its own, restored by the next launch. */
  trigger?: CleanupTrigger;
}

export interface RemovalOutcome {
  outcome: WorktreeOutcome;
  savedRef?: string;
  savedCommit?: string;
  /** A dirty worktree kept because its work could not be saved (domain/cleanup.ts keepsWhenUnsaved). */
  reason?: 'save_failed';
  /** Ignored paths its save left out as rebuilt (domain/rebuildable.ts). */
  leftOut?: { path: string; reason: 'rebuildable' }[];
}

/** Cleanup of what the records hold on this executor's place, with the same audit, outcomes and failure classes everywhere [R6.4, R6.6]. */
export interface CleanupOperations {
  /** The snapshot's agents still running are stopped, each through the one stop; answers how many. */
  stopProcesses(processes: SnapshotProcess[]): Promise<number>;
  /** What agents added to their task stores, or committed on a target, comes home before anything is judged or removed. */
  bringWorkHome(worktrees: SnapshotWorktree[]): Promise<void>;
  /** Repositories whose worktree or clone has uncommitted work, or cannot be examined (that is dirty too). */
  findDirty(worktrees: SnapshotWorktree[]): Promise<string[]>;
  /** The audit, then the removal; any doubt keeps it and fails classified. Something already gone counts as done. */
  removeAudited(req: RemovalRequest): Promise<RemovalOutcome>;
  /** The task folder and its marker, once nothing else is in it; false when it is kept. */
  removeTaskFolder(input: {
    taskFolder: string;
    ownerTaskId: string;
    environmentId: string;
    sshTargetId?: string | null;
  }): Promise<boolean>;
  /** A deleted task's run folders (its agents' logs) on this executor's places. */
  removeTaskRuns(input: { taskId: string; sessionIds: string[]; sshTargetIds: string[] }): Promise<void>;
}

/** Disk [R6.11]: what a workspace holds, measured where it is (in the background, never on a request's path). */
export interface DiskOperations {
  /** The bytes of the workspace folder (every file, ignored ones too); null when it cannot be measured now. */
  workspaceBytes(place: { workspacePath: string; sshTargetId: string | null }): Promise<number | null>;
}

/**
 * An optional capability (Kandev's shape: small interfaces beside the required one): putting a
 * saved commit's work back into a worktree the executor just made [R6.10]. `conflict` changes nothing.
 */
interface RestoresWork {
  /** `overPreparation`: the new worktree's preparation wrote into it (copied files, its setup); the work wins over that. */
  restoreWork(
    plan: LaunchPlan,
    slot: MaterializedSlot,
    commit: string,
    overPreparation?: boolean,
  ): Promise<'applied' | 'conflict'>;
}

export interface Executor
  extends
    WorkspaceOperations,
    AgentOperations,
    GitOperations,
    CleanupOperations,
    DiskOperations,
    Partial<RestoresWork> {
  readonly kind: ExecutorKind;
}
