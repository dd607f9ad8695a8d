/**
 * Idle release [R6.9], as a rule: an environment is released for idleness when every task that
 * uses it (its owner, the tasks inheriting it, its group, any task with a session on it) has
 * been idle for the threshold: no session running or starting, no live agent, not pinned, and
 * no launch, resume, agent start or exit, or observed change of its worktrees since the cutoff.
 */

/** What the records say of one environment and the tasks that use it. */
export interface IdleFacts {
  ownerTaskId: string;
  environmentId: string;
  /** Any task using it is pinned. */
  pinned: boolean;
  /** A session of a task using it is running or starting, or an agent on it is recorded running. */
  busy: boolean;
  /** The busy one is another task than the owner (a shared environment). */
  busyElsewhere: boolean;
  /** The latest activity of every task using it and of its workspace (ISO-8601). */
  lastActivityAt: string;
}

export type IdleKeptReason = 'pinned' | 'running' | 'shared_task_running';

export type IdleDecision = { release: true } | { release: false; reason: IdleKeptReason | 'recently_active' };

export function decideIdle(facts: IdleFacts, cutoff: string): IdleDecision {
  if (Date.parse(facts.lastActivityAt) >= Date.parse(cutoff)) return { release: false, reason: 'recently_active' };
  if (facts.busy) return { release: false, reason: facts.busyElsewhere ? 'shared_task_running' : 'running' };
  if (facts.pinned) return { release: false, reason: 'pinned' };
  return { release: true };
}

/** What one idle-release run does or would do. */
export interface IdleReleaseResult {
  released: { taskId: string; operationId: string | null }[];
  kept: { taskId: string; reason: IdleKeptReason }[];
  dryRun: boolean;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration setting: milliseconds as a plain number, or a number with a unit (`90s`, `15m`, `1h`, `7d`). */
export function parseDuration(raw: string, name: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(raw);
  if (!match) throw new Error(`${name} must be a duration such as 90s, 15m, 1h or 7d (or milliseconds)`);
  return Math.round(Number(match[1]) * UNIT_MS[match[2] ?? 'ms']!);
}

/** TWS_IDLE_RELEASE_AFTER: how long a workspace idles before it is released; null (`0` or `off`) turns release off. */
export function parseIdleReleaseAfter(raw: string | undefined): number | null {
  if (raw === undefined || raw.trim() === '') return 7 * UNIT_MS.d!;
  if (raw.trim() === 'off') return null;
  const ms = parseDuration(raw, 'TWS_IDLE_RELEASE_AFTER');
  return ms === 0 ? null : ms;
}

/** TWS_IDLE_RELEASE_EVERY: how often each host looks for idle workspaces (default 1 h, at least a second). */
export function parseIdleReleaseEvery(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return UNIT_MS.h!;
  const ms = parseDuration(raw, 'TWS_IDLE_RELEASE_EVERY');
  if (ms < 1_000) throw new Error('TWS_IDLE_RELEASE_EVERY must be at least 1s');
  return ms;
}
