/**
 * Co-residency observation [R5]: a counter and a structured warning, never a change of outcome.
 * Labels are a closed set: the admission site and the skip reason, never an identifier.
 */
export type CoresidencySite = 'launch' | 'resume';

export type CoresidencySkipReason = 'sibling_read_timeout' | 'sibling_read_failed';

export const CORESIDENCY_ADMITTED_TOTAL = 'session_coresidency_admitted_total';
export const CORESIDENCY_SKIPPED_TOTAL = 'session_coresidency_observation_skipped_total';

export type CoresidencyObservation =
  | { outcome: 'coresident'; siblingSessionIds: string[] }
  | { outcome: 'alone' }
  | { outcome: 'skipped'; reason: CoresidencySkipReason };

/** Postgres' lock_not_available and query_canceled are a timeout; anything else is a failed read. */
export function skipReasonOf(pgCode: string | undefined): CoresidencySkipReason {
  return pgCode === '55P03' || pgCode === '57014' ? 'sibling_read_timeout' : 'sibling_read_failed';
}
