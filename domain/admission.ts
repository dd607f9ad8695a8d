/**
 * The launch admission table (docs/behaviour.md, "Admission"), as data.
 * Admission reads the canonical environment and the task's mode, classifies the situation,
 * and this table says what happens. The database transaction in db/admission.ts applies it.
 */
import type { RefusalCode } from './errors';

export type WorkspaceMode = 'new_workspace' | 'inherit_parent' | 'shared_group';

/**
 * Executors a host runs: `worktree` and `local` keep their files on the host (git on the host
 * inspects them); `ssh` keeps them on an SSH target the host's worker talks to, where the
 * executor's own inventory and runtime handle are the authority (ssh/); `container` keeps them on
 * the host as `worktree` does (the same worktrees) and runs the agents in a container of the task.
 */
export const EXECUTOR_TYPES = ['worktree', 'local', 'ssh', 'container'] as const;
export type ExecutorType = (typeof EXECUTOR_TYPES)[number];

/**
 * Remote executor kinds the contract knows but this build does not run: a launch asking for one
 * is refused `workspace_reuse_unsupported` before any side effect.
 */
export type RequestedExecutor = ExecutorType | 'sandbox';

/**
 * The workspace an executor works in: a `container` task's is a worktree workspace (its agents run
 * elsewhere, its files do not), so admission, its folder and its inventory treat the two as one and
 * a move between them reuses the same worktrees.
 */
export type WorkspaceKind = Exclude<ExecutorType, 'container'>;
export const workspaceKindOf = (executor: ExecutorType): WorkspaceKind =>
  executor === 'container' ? 'worktree' : executor;

export const isRunnableExecutor = (kind: string): kind is ExecutorType =>
  (EXECUTOR_TYPES as readonly string[]).includes(kind);

/** Whether an executor's files live on a remote place the host cannot inspect with its own git. */
export const isRemoteExecutor = (kind: string): boolean => kind === 'ssh';

export type EnvironmentStatus = 'creating' | 'ready' | 'stopped' | 'failed' | 'released';

/** What admission found, reduced to the facts the table depends on. */
export type EnvironmentSituation =
  | 'none'
  | 'creating_materializer_alive'
  | 'creating_materializer_gone'
  | 'ready_complete'
  | 'ready_incomplete'
  | 'failed_never_materialized'
  | 'failed_after_materialization'
  | 'released' // cleanup removed its worktrees (archive, reset); the branch and any dirty worktree were kept
  | 'unavailable'; // inherit_parent: missing, parent archived

export type AdmissionDecision =
  { kind: 'materialize' } | { kind: 'attach' } | { kind: 'refuse'; code: RefusalCode; markEnvironmentFailed?: boolean };

const refuse = (code: RefusalCode, markEnvironmentFailed = false): AdmissionDecision => ({
  kind: 'refuse',
  code,
  markEnvironmentFailed,
});

export const ADMISSION_TABLE: Record<WorkspaceMode, Record<EnvironmentSituation, AdmissionDecision>> = {
  new_workspace: {
    none: { kind: 'materialize' },
    creating_materializer_alive: refuse('workspace_preparing'),
    creating_materializer_gone: refuse('workspace_reuse_unsafe', true),
    ready_complete: { kind: 'attach' },
    ready_incomplete: refuse('workspace_reuse_unsafe'),
    failed_never_materialized: { kind: 'materialize' },
    failed_after_materialization: refuse('workspace_reuse_unsafe'),
    released: { kind: 'materialize' },
    unavailable: refuse('workspace_reuse_unsafe'),
  },
  // A child never creates an environment of its own. Its parent's released one (an idle release,
  // an abandonment) it materializes again, as the parent's next launch would [R6.10]: the same
  // environment row, the parent's folder, branches and saved work.
  inherit_parent: {
    none: refuse('workspace_reuse_unsafe'),
    creating_materializer_alive: refuse('workspace_preparing'),
    creating_materializer_gone: refuse('workspace_reuse_unsafe', true),
    ready_complete: { kind: 'attach' },
    ready_incomplete: refuse('workspace_reuse_unsafe'),
    failed_never_materialized: refuse('workspace_reuse_unsafe'),
    failed_after_materialization: refuse('workspace_reuse_unsafe'),
    released: { kind: 'materialize' },
    unavailable: refuse('workspace_reuse_unsafe'),
  },
  shared_group: {
    none: { kind: 'materialize' },
    creating_materializer_alive: refuse('workspace_preparing'),
    creating_materializer_gone: refuse('workspace_reuse_unsafe', true),
    ready_complete: { kind: 'attach' },
    ready_incomplete: refuse('workspace_reuse_unsafe'),
    failed_never_materialized: { kind: 'materialize' },
    failed_after_materialization: refuse('workspace_reuse_unsafe'),
    released: { kind: 'materialize' },
    unavailable: refuse('workspace_reuse_unsafe'),
  },
};

export function decideAdmission(mode: WorkspaceMode, situation: EnvironmentSituation): AdmissionDecision {
  return ADMISSION_TABLE[mode][situation];
}

/** Session states in which a materializer still counts as alive. */
const WORKING_SESSION_STATES = ['starting', 'running'] as const;

export interface EnvironmentFacts {
  status: EnvironmentStatus;
  materialized: boolean;
  materializerState: string | null; // state of the materializer session, null when the row is gone
  activeRowsPerSlot: number[]; // for each requested slot, how many active inventory rows it has
}

export function classifyEnvironment(facts: EnvironmentFacts | null): EnvironmentSituation {
  if (!facts) return 'none';
  switch (facts.status) {
    case 'creating':
      return facts.materializerState !== null &&
        (WORKING_SESSION_STATES as readonly string[]).includes(facts.materializerState)
        ? 'creating_materializer_alive'
        : 'creating_materializer_gone';
    case 'ready':
    case 'stopped':
      return facts.activeRowsPerSlot.every((n) => n === 1) ? 'ready_complete' : 'ready_incomplete';
    case 'failed':
      return facts.materialized ? 'failed_after_materialization' : 'failed_never_materialized';
    case 'released':
      return 'released';
  }
}
