/** Each figure against its target (targets.ts). */
import type { BenchResults, Outcome } from './model';
import type { ConsoleSpeedResult } from './scenarios/console-speed';
import { judge, TARGETS, type TargetResult } from './targets';

export function evaluateTargets(r: Omit<BenchResults, 'targets'>): TargetResult[] {
  const failed = (o: { ok: boolean; error?: string } | undefined) =>
    !o
      ? { status: 'not_available' as const, note: 'not run' }
      : o.ok
        ? undefined
        : { status: 'error' as const, note: o.error ?? 'failed' };
  const value = <T, V>(o: Outcome<T> | undefined, f: (v: T) => V): V | null => (o?.ok ? f(o.value) : null);
  /** A figure read from one scenario's outcome, judged against its target (an outcome that failed says so). */
  const judged = <T>(
    target: Parameters<typeof judge>[0],
    o: Outcome<T> | undefined,
    f: (v: T) => number | null | undefined,
  ) => judge(target, value(o, f), failed(o));
  const out: TargetResult[] = [];
  out.push(judged(TARGETS.attachRatio, r.attach, (a) => a.ratioToFloorsP50));
  out.push(judged(TARGETS.materialize1Ratio, r.materialize, (m) => m.oneRepository.ratioToFloorsP50));
  out.push(judged(TARGETS.materialize3Ratio, r.materialize, (m) => m.threeRepositories.ratioToFloorsP50));
  out.push(judged(TARGETS.resumeRatio, r.resume, (x) => x.ratioToFloorsP50));
  out.push(judged(TARGETS.sshAttachRatio, r.sshAttach, (x) => x.ratioToFloorsP50));
  out.push(judged(TARGETS.containerAttachRatio, r.containerAttach, (x) => x.ratioToFloorsP50));
  if (r.cleanup.ok && r.cleanup.value.status === 'not_available') {
    out.push(
      judge(TARGETS.cleanupThroughput, null, {
        status: 'not_available',
        note: `archive route answers ${r.cleanup.value.probe.httpStatus} ${r.cleanup.value.probe.code}`,
      }),
    );
  } else {
    out.push(
      judge(
        TARGETS.cleanupThroughput,
        r.cleanup.ok && r.cleanup.value.status === 'measured' ? r.cleanup.value.throughputRatioToFloors : null,
        failed(r.cleanup),
      ),
    );
  }
  const board = r.boardDelete?.ok ? r.boardDelete.value : null;
  if (board && (board.product.leftBehind > 0 || board.product.failures > 0)) {
    // "Until every worktree is verified gone" never came: no throughput to judge, a miss.
    out.push({
      ...TARGETS.boardDeleteThroughput,
      measured: 0,
      status: 'miss',
      note: `${board.product.leftBehind} of ${board.tasks} worktrees left behind, ${board.product.failures} jobs failed`,
    });
  } else out.push(judge(TARGETS.boardDeleteThroughput, board?.throughputRatio, failed(r.boardDelete)));
  const idle = r.idleRelease?.ok ? r.idleRelease.value : null;
  const idleFailed = failed(r.idleRelease);
  if (idle && (idle.release.product.leftBehind > 0 || idle.release.product.failures > 0)) {
    out.push({
      ...TARGETS.idleReleaseThroughput,
      measured: 0,
      status: 'miss',
      note: `${idle.release.product.leftBehind} of ${idle.tasks} worktrees left behind, ${idle.release.product.failures} not released or failed`,
    });
  } else out.push(judge(TARGETS.idleReleaseThroughput, idle?.release.throughputRatio, idleFailed));
  const restoreMissed = idle
    ? idle.restore.product.failures +
      (idle.restore.product.verified.sampled - idle.restore.product.verified.identical) +
      idle.tasks -
      (idle.restore.product.restoreOutcomes.applied ?? 0)
    : 0;
  if (idle && restoreMissed > 0) {
    out.push({
      ...TARGETS.idleRestoreThroughput,
      measured: 0,
      status: 'miss',
      note: `${idle.restore.product.failures} launches failed, ${idle.tasks - (idle.restore.product.restoreOutcomes.applied ?? 0)} not applied, ${idle.restore.product.verified.sampled - idle.restore.product.verified.identical} of ${idle.restore.product.verified.sampled} sampled not identical`,
    });
  } else out.push(judge(TARGETS.idleRestoreThroughput, idle?.restore.throughputRatio, idleFailed));
  out.push(
    judge(
      TARGETS.diskMeasurementAttach,
      r.diskMeasurement?.ok ? r.diskMeasurement.value.ratioP50 : null,
      failed(r.diskMeasurement),
    ),
  );
  out.push(judged(TARGETS.limitsAttach, r.limits, (l) => l.attachRatioP50));
  out.push(judged(TARGETS.limitsFirstLaunch, r.limits, (l) => l.firstLaunchRatioP50));
  out.push(judged(TARGETS.sandboxAttach, r.sandbox, (l) => l.attachRatioP50));
  out.push(judged(TARGETS.sandboxFirstLaunch, r.sandbox, (l) => l.firstLaunchRatioP50));
  const supervision = r.supervision?.ok ? r.supervision.value.supervisor : null;
  out.push(judge(TARGETS.supervisorPss, supervision?.pssP50Mb, failed(r.supervision)));
  out.push(judge(TARGETS.supervisorStartCpu, supervision?.cpuP50Ms, failed(r.supervision)));
  const alive = r.agentsAlive?.ok ? r.agentsAlive.value : null;
  out.push(judge(TARGETS.aliveWorkerRss, alive?.ratio.worker, failed(r.agentsAlive)));
  out.push(judge(TARGETS.aliveGatewayRss, alive?.ratio.gateway, failed(r.agentsAlive)));
  const tracing = r.tracing?.ok ? r.tracing.value : null;
  out.push(
    judge(
      TARGETS.tracingAttach,
      tracing?.ratioP50,
      tracing && tracing.exported.on.spans === 0
        ? { status: 'error', note: 'no span reached the sink while tracing was on: nothing was compared' }
        : failed(r.tracing),
    ),
  );
  for (const [target, strategy] of [
    [TARGETS.mergeSquashRatio, 'squash'],
    [TARGETS.mergeMergeRatio, 'merge'],
  ] as const)
    out.push(judged(target, r.merge, (m) => m.strategies.find((x) => x.strategy === strategy)?.ratioToFloorsP50));
  const atOnce = r.mergesAtOnce?.ok ? r.mergesAtOnce.value : null;
  if (atOnce && atOnce.failures > 0)
    // Not every merge landed: nothing to time, a miss.
    out.push({
      ...TARGETS.mergesAtOnceWall,
      measured: null,
      status: 'miss',
      note: `failed: ${atOnce.failures} merges did not land (${Object.entries(atOnce.failureCodes)
        .map(([k, n]) => `${k}: ${n}`)
        .join(', ')})`,
    });
  else out.push(judged(TARGETS.mergesAtOnceWall, r.mergesAtOnce, (m) => m.wallRatio));
  out.push(...judgeConsole(r.consoleSpeed));
  out.push(judged(TARGETS.manyTasksFailures, r.manyTasks, (m) => m.failures));
  out.push(judged(TARGETS.manyTasksWall, r.manyTasks, (m) => m.wallRatio));
  out.push(judged(TARGETS.growthRatio, r.growth, (g) => g.ratioP50));
  if (r.exitDetection) {
    const e = r.exitDetection;
    out.push(judge(TARGETS.exitWatched, e.ok ? e.value.watched.p50 : null, failed(e)));
    out.push(judge(TARGETS.exitUnwatched, e.ok ? e.value.unwatched.p50 : null, failed(e)));
  }
  const peak = (w: BenchResults['memory'] extends infer M ? (M extends { worker: infer W } ? W : never) : never) =>
    Math.max(w.peakRssMb ?? 0, w.hwmReset ? (w.hwmMb ?? 0) : 0);
  out.push(
    judge(
      TARGETS.workerRss,
      r.memory ? peak(r.memory.worker) : null,
      r.memory ? undefined : { status: 'error', note: 'memory not sampled' },
    ),
  );
  out.push(
    judge(
      TARGETS.gatewayRss,
      r.memory ? peak(r.memory.gateway) : null,
      r.memory ? undefined : { status: 'error', note: 'memory not sampled' },
    ),
  );
  return out;
}

/** The console's rows: skipped (no browser) is not available, with its reason; a failed run is an error. */
function judgeConsole(o: Outcome<ConsoleSpeedResult> | undefined): TargetResult[] {
  const figures: [
    Parameters<typeof judge>[0],
    (m: Extract<ConsoleSpeedResult, { status: 'measured' }>) => number | null,
  ][] = [
    [TARGETS.consoleFirstRender, (m) => m.board.firstRender.p50],
    [TARGETS.consoleCardsInDom, (m) => m.board.cardsInDom],
    [TARGETS.consoleLiveUpdate, (m) => m.board.liveUpdate.p50],
    [TARGETS.consoleLogLastLine, (m) => ('error' in m.log ? null : m.log.lastLineShown.p50)],
    [TARGETS.consoleLogLines, (m) => ('error' in m.log ? null : m.log.lineElements)],
    [TARGETS.consoleAssetsRefetched, (m) => m.assets.refetchedOnSecondLoad.length],
  ];
  return figures.map(([target, f]) =>
    !o
      ? judge(target, null, { status: 'not_available', note: 'not run' })
      : !o.ok
        ? judge(target, null, { status: 'error', note: o.error })
        : o.value.status === 'skipped'
          ? judge(target, null, { status: 'not_available', note: `skipped: ${o.value.reason}` })
          : f(o.value) === null && 'error' in o.value.log
            ? { ...target, measured: null, status: 'miss' as const, note: o.value.log.error }
            : judge(target, f(o.value)),
  );
}
