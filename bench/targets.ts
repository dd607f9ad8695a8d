/** The benchmark's targets, as data, and how a measured figure is judged against one. */
export type TargetStatus = 'pass' | 'miss' | 'not_available' | 'error';

export interface Target {
  id: string;
  label: string;
  comparator: '<=' | '>=' | '==';
  value: number;
  unit: 'x' | 'MB' | 'failures' | 'ms' | 'elements' | 'requests';
}

export interface TargetResult extends Target {
  measured: number | null;
  status: TargetStatus;
  note?: string;
}

/**
 * Round 4: each launch is judged against bare floor + engine floor of its own shape,
 * as a ratio product / (bare + engine); the cleanups by throughput. Round 5 adds
 * rows for idle release and restore against their bare floors, and attach with the disk
 * measurement running against without ("must not move launch latency": ≤ 1.05). Round 6 adds
 * per-agent supervision (≤ 1 MB PSS, ≤ 5 ms CPU to start), the services' RSS with 100
 * agents alive against none (≤ 1.10 each), attach with tracing exporting against not loaded (≤ 1.02).
 * The container executor's attach is judged as the ssh one: against its own floor (the engine's
 * `podman exec` in the same container) + the engine floor, ≤ 1.15.
 */
export const TARGETS = {
  attachRatio: {
    id: 'attach_p50_vs_floors',
    label: 'Attach p50 / (bare floor + engine floor)',
    comparator: '<=',
    value: 1.15,
    unit: 'x',
  },
  materialize1Ratio: {
    id: 'materialize_1_repo_p50_vs_floors',
    label: 'First launch (1 repository) p50 / (bare + engine floor)',
    comparator: '<=',
    value: 1.15,
    unit: 'x',
  },
  materialize3Ratio: {
    id: 'materialize_3_repos_p50_vs_floors',
    label: 'First launch (3 repositories) p50 / (bare + engine floor)',
    comparator: '<=',
    value: 1.15,
    unit: 'x',
  },
  resumeRatio: {
    id: 'resume_p50_vs_floors',
    label: 'Resume p50 / (bare floor + engine floor)',
    comparator: '<=',
    value: 1.15,
    unit: 'x',
  },
  sshAttachRatio: {
    id: 'ssh_attach_p50_vs_floors',
    label: 'SSH attach p50 / (ssh floor + engine floor)',
    comparator: '<=',
    value: 1.15,
    unit: 'x',
  },
  containerAttachRatio: {
    id: 'container_attach_p50_vs_floors',
    label: 'Container attach p50 / (container floor + engine floor)',
    comparator: '<=',
    value: 1.15,
    unit: 'x',
  },
  cleanupThroughput: {
    id: 'archive_throughput_vs_floors',
    label: 'Single archives: throughput / throughput of (bare + engine floor per task)',
    comparator: '>=',
    value: 0.8,
    unit: 'x',
  },
  boardDeleteThroughput: {
    id: 'board_delete_throughput_vs_bare',
    label: 'Board delete: throughput / bare floor throughput',
    comparator: '>=',
    value: 0.5,
    unit: 'x',
  },
  idleReleaseThroughput: {
    id: 'idle_release_throughput_vs_bare',
    label: 'Idle release: throughput / bare floor throughput',
    comparator: '>=',
    value: 0.6,
    unit: 'x',
  },
  idleRestoreThroughput: {
    id: 'idle_restore_throughput_vs_bare',
    label: 'Restore on the next launch: throughput / bare floor throughput',
    comparator: '>=',
    value: 0.6,
    unit: 'x',
  },
  limitsAttach: {
    id: 'attach_with_limits_ratio',
    label: 'Attach p50 with agents’ limits on / off',
    comparator: '<=',
    value: 1.05,
    unit: 'x',
  },
  limitsFirstLaunch: {
    id: 'first_launch_with_limits_ratio',
    label: 'First launch p50 with agents’ limits on / off',
    comparator: '<=',
    value: 1.05,
    unit: 'x',
  },
  sandboxAttach: {
    id: 'attach_with_sandbox_ratio',
    label: 'Attach p50 with agents sandboxed / not',
    comparator: '<=',
    value: 1.05,
    unit: 'x',
  },
  sandboxFirstLaunch: {
    id: 'first_launch_with_sandbox_ratio',
    label: 'First launch p50 with agents sandboxed / not',
    comparator: '<=',
    value: 1.05,
    unit: 'x',
  },
  diskMeasurementAttach: {
    id: 'attach_with_disk_measurement_ratio',
    label: 'Attach p50 with the disk measurement running / without',
    comparator: '<=',
    value: 1.05,
    unit: 'x',
  },
  supervisorPss: {
    id: 'supervisor_pss_p50_mb',
    label: 'Per-agent supervision: the C supervisor’s PSS, p50',
    comparator: '<=',
    value: 1,
    unit: 'MB',
  },
  supervisorStartCpu: {
    id: 'supervisor_start_cpu_p50_ms',
    label:
      'Per-agent supervision: the C supervisor’s CPU to start, p50 (raw, its exec included; the `sh` floors beside)',
    comparator: '<=',
    value: 5,
    unit: 'ms',
  },
  aliveWorkerRss: {
    id: 'worker_rss_100_agents_ratio',
    label: 'Worker RSS with 100 agents alive / with none',
    comparator: '<=',
    value: 1.1,
    unit: 'x',
  },
  aliveGatewayRss: {
    id: 'gateway_rss_100_agents_ratio',
    label: 'Gateway RSS with 100 agents alive / with none',
    comparator: '<=',
    value: 1.1,
    unit: 'x',
  },
  tracingAttach: {
    id: 'attach_tracing_exporting_vs_not_loaded_ratio',
    label: 'Attach p50 with tracing exporting every span to a local OTLP sink / with tracing not loaded (the default)',
    comparator: '<=',
    value: 1.02,
    unit: 'x',
  },
  mergeSquashRatio: {
    id: 'merge_squash_p50_vs_floors',
    label: 'Merge (squash) of a task with 20 commits p50 / (the git by hand + engine floor of one activity)',
    comparator: '<=',
    value: 1.2,
    unit: 'x',
  },
  mergeMergeRatio: {
    id: 'merge_merge_p50_vs_floors',
    label: 'Merge (merge commit) of a task with 20 commits p50 / (the git by hand + engine floor of one activity)',
    comparator: '<=',
    value: 1.2,
    unit: 'x',
  },
  mergesAtOnceWall: {
    id: 'merges_at_once_wall_vs_sequential',
    label: '20 merges at once into one base: wall time / 20 merges one after another (every one landed)',
    comparator: '<=',
    value: 1.3,
    unit: 'x',
  },
  consoleFirstRender: {
    id: 'console_board_first_render_p50_ms',
    label: 'Console: the board with 1,000 tasks, navigation to the first card visible, median',
    comparator: '<=',
    value: 1000,
    unit: 'ms',
  },
  consoleCardsInDom: {
    id: 'console_board_cards_in_dom',
    label: 'Console: card elements in the DOM of the board with 1,000 tasks (virtualized)',
    comparator: '<=',
    value: 100,
    unit: 'elements',
  },
  consoleLiveUpdate: {
    id: 'console_live_update_p50_ms',
    label: 'Console: a task created through the API until its card is on the open board, median',
    comparator: '<=',
    value: 500,
    unit: 'ms',
  },
  consoleLogLastLine: {
    id: 'console_log_last_line_p50_ms',
    label: 'Console: a session log of 100,000 lines, navigation to its last line shown, median',
    comparator: '<=',
    value: 2000,
    unit: 'ms',
  },
  consoleLogLines: {
    id: 'console_log_lines_in_dom',
    label: 'Console: line elements in the DOM of a log of 100,000 lines (virtualized)',
    comparator: '<=',
    value: 100,
    unit: 'elements',
  },
  consoleAssetsRefetched: {
    id: 'console_assets_refetched',
    label: 'Console: hashed assets fetched again by a second load of the page',
    comparator: '==',
    value: 0,
    unit: 'requests',
  },
  manyTasksFailures: {
    id: 'many_tasks_failures',
    label: 'Simultaneous first launches on one repository: failures',
    comparator: '==',
    value: 0,
    unit: 'failures',
  },
  manyTasksWall: {
    id: 'many_tasks_wall_vs_floor',
    label: 'Simultaneous first launches on one repository: wall time / floor wall time',
    comparator: '<=',
    value: 1.3,
    unit: 'x',
  },
  growthRatio: {
    id: 'growth_attach_p50_ratio',
    label: 'Attach p50 at the large database / at 100 tasks',
    comparator: '<=',
    value: 1.1,
    unit: 'x',
  },
  exitWatched: {
    id: 'exit_noticed_watched_p50_ms',
    label: 'Agent exit recorded, its starting process alive, p50',
    comparator: '<=',
    value: 1000,
    unit: 'ms',
  },
  exitUnwatched: {
    id: 'exit_noticed_unwatched_p50_ms',
    label: 'Agent exit recorded, its starting process killed, p50',
    comparator: '<=',
    value: 10_000,
    unit: 'ms',
  },
  workerRss: {
    id: 'worker_peak_rss_mb',
    label: 'Worker peak RSS during scenarios 3, 4 and 8',
    comparator: '<=',
    value: 300,
    unit: 'MB',
  },
  gatewayRss: {
    id: 'gateway_peak_rss_mb',
    label: 'Gateway peak RSS during scenarios 3, 4 and 8',
    comparator: '<=',
    value: 200,
    unit: 'MB',
  },
} satisfies Record<string, Target>;

export function judge(
  target: Target,
  measured: number | null | undefined,
  unavailable?: { status: 'not_available' | 'error'; note: string },
): TargetResult {
  if (unavailable) return { ...target, measured: null, status: unavailable.status, note: unavailable.note };
  if (measured === null || measured === undefined || !Number.isFinite(measured))
    return { ...target, measured: null, status: 'error', note: 'not measured' };
  const ok =
    target.comparator === '<='
      ? measured <= target.value
      : target.comparator === '>='
        ? measured >= target.value
        : measured === target.value;
  return { ...target, measured, status: ok ? 'pass' : 'miss' };
}

export function describeTarget(t: Target): string {
  const sym = t.comparator === '<=' ? '≤' : t.comparator === '>=' ? '≥' : '=';
  const unit = t.unit === 'x' ? '×' : ` ${t.unit}`;
  return `${sym} ${t.value}${unit}`;
}
