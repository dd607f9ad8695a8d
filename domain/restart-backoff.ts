/**
 * How long the launcher waits before starting a part again after it died: a short first wait, so
 * a one-off crash costs half a second, doubling while the part keeps dying so a part that cannot
 * start does not spin, and back to the first wait once it stayed up long enough to count as healthy.
 */
export interface RestartBackoff {
  firstWaitMs: number;
  maxWaitMs: number;
  /** A part that ran at least this long before dying starts again after firstWaitMs. */
  healthyAfterMs: number;
}

export const DEFAULT_RESTART_BACKOFF: RestartBackoff = { firstWaitMs: 500, maxWaitMs: 30_000, healthyAfterMs: 60_000 };

/**
 * The wait before the next start. `previousWaitMs` is the wait before the run that just ended
 * (null for the first death); `ranForMs` is how long that run lasted (0 when it did not start).
 */
export function nextRestartWait(backoff: RestartBackoff, previousWaitMs: number | null, ranForMs: number): number {
  if (previousWaitMs === null || ranForMs >= backoff.healthyAfterMs) return backoff.firstWaitMs;
  return Math.min(previousWaitMs * 2, backoff.maxWaitMs);
}
