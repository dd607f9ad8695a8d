import { Context } from '@temporalio/activity';

/** Heartbeats while a long git or filesystem step runs, so a dead worker is noticed in seconds. */
export async function withHeartbeat<T>(detail: string, fn: () => Promise<T>): Promise<T> {
  let ctx: Context | null = null;
  try {
    ctx = Context.current();
  } catch {
    ctx = null; // called outside an activity (a direct call from a tool or a test)
  }
  // A local activity cannot heartbeat: its workflow task is kept alive by the worker instead.
  if (!ctx || ctx.info.isLocal) return fn();
  const active = ctx;
  // Four beats within the step's heartbeat timeout (TWS_STEP_HEARTBEAT_TIMEOUT_MS), at most every 5 s.
  const everyMs = Math.min(5_000, Math.max(250, (active.info.heartbeatTimeoutMs ?? 20_000) / 4));
  active.heartbeat(detail);
  const timer = setInterval(() => active.heartbeat(detail), everyMs);
  try {
    return await fn();
  } finally {
    clearInterval(timer);
  }
}
