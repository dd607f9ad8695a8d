/**
 * The periodic consistency check: a job or session whose workflow is closed while its
 * row still says it is active is repaired; what it repaired is counted, by kind.
 */
export const RECONCILE_REPAIRED_TOTAL = 'reconcile_repaired_total';

/** The closed set of label values of RECONCILE_REPAIRED_TOTAL. */
export type RepairKind =
  /** An active cleanup job whose workflow had closed: a run continues it from its snapshot. */
  | 'cleanup_job_resumed'
  /** A session still `starting` whose launch had closed: `running` if its agent runs, else `failed`. */
  | 'session_settled'
  /** A spawn intent whose start died unrecorded: the agent its mark names is stopped. */
  | 'spawn_intent_stopped'
  /** An execution recorded running whose process is gone (pid and start time). */
  | 'execution_vanished';

export interface ReconcileReport {
  repaired: Partial<Record<RepairKind, number>>;
  /** Rows whose workflow the engine could not describe this time: left as they are, checked next time. */
  undecided: number;
}

/** A row younger than this is left to its workflow: it may be starting or about to record. */
export const RECONCILE_MIN_AGE_MS = 60_000;

/** The engine's word on a workflow: running, closed, unknown to it, or no answer. */
export type WorkflowLiveness = 'running' | 'closed' | 'not_found' | 'unknown';

/** Whether a row that says "active" is stranded: its workflow is closed or gone. Unknown never is. */
export const isStranded = (liveness: WorkflowLiveness): boolean => liveness === 'closed' || liveness === 'not_found';
