/** The targets, as data, and how a measured figure is judged against one. */
export type TargetStatus = 'pass' | 'miss' | 'not_available' | 'error';

export interface Target {
  id: string;
  label: string;
  comparator: '<=' | '>=' | '==';
  value: number;
  unit: 'x' | 'MB' | 'failures' | 'ms';
}

export interface TargetResult extends Target {
  measured: number | null;
  status: TargetStatus;
  note?: string;
}

export const TARGETS = {
  attachRatio: { id: 'attach_p50_ratio', label: 'Attach launch p50, product / floor', comparator: '<=', value: 2.0, unit: 'x' },
  materialize1Ratio: { id: 'materialize_1_repo_p50_ratio', label: 'Materializing launch (1 repository) p50, product / floor', comparator: '<=', value: 1.3, unit: 'x' },
  materialize3Ratio: { id: 'materialize_3_repos_p50_ratio', label: 'Materializing launch (3 repositories) p50, product / floor', comparator: '<=', value: 1.3, unit: 'x' },
  manyTasksFailures: { id: 'many_tasks_failures', label: 'Simultaneous first launches on one repository: failures', comparator: '==', value: 0, unit: 'failures' },
  cleanupThroughput: { id: 'cleanup_throughput_ratio', label: 'Cleanup throughput, product / floor', comparator: '>=', value: 0.5, unit: 'x' },
  growthRatio: { id: 'growth_attach_p50_ratio', label: 'Attach p50 at 10,000 tasks / at 100 tasks', comparator: '<=', value: 1.1, unit: 'x' },
  exitWatched: { id: 'exit_noticed_watched_p50_ms', label: 'Agent exit recorded, its starting process alive, p50', comparator: '<=', value: 1000, unit: 'ms' },
  exitUnwatched: { id: 'exit_noticed_unwatched_p50_ms', label: 'Agent exit recorded, its starting process killed, p50', comparator: '<=', value: 10_000, unit: 'ms' },
  workerRss: { id: 'worker_peak_rss_mb', label: 'Worker peak RSS during scenarios 3 and 4', comparator: '<=', value: 300, unit: 'MB' },
} satisfies Record<string, Target>;

export function judge(target: Target, measured: number | null | undefined, unavailable?: { status: 'not_available' | 'error'; note: string }): TargetResult {
  if (unavailable) return { ...target, measured: null, status: unavailable.status, note: unavailable.note };
  if (measured === null || measured === undefined || !Number.isFinite(measured)) return { ...target, measured: null, status: 'error', note: 'not measured' };
  const ok = target.comparator === '<=' ? measured <= target.value : target.comparator === '>=' ? measured >= target.value : measured === target.value;
  return { ...target, measured, status: ok ? 'pass' : 'miss' };
}

export function describeTarget(t: Target): string {
  const sym = t.comparator === '<=' ? '≤' : t.comparator === '>=' ? '≥' : '=';
  const unit = t.unit === 'x' ? '×' : t.unit === 'MB' ? ' MB' : t.unit === 'ms' ? ' ms' : ' failures';
  return `${sym} ${t.value}${unit}`;
}
