/** Each figure against its target of the issue. */
import type { BenchResults } from './model';
import { judge, TARGETS, type TargetResult } from './targets';

export function evaluateTargets(r: Omit<BenchResults, 'targets'>): TargetResult[] {
  const failed = (o: { ok: boolean; error?: string }) => (o.ok ? undefined : { status: 'error' as const, note: o.error ?? 'failed' });
  const out: TargetResult[] = [];
  out.push(judge(TARGETS.attachRatio, r.attach.ok ? r.attach.value.ratioP50 : null, failed(r.attach)));
  out.push(judge(TARGETS.materialize1Ratio, r.materialize.ok ? r.materialize.value.oneRepository.ratioP50 : null, failed(r.materialize)));
  out.push(judge(TARGETS.materialize3Ratio, r.materialize.ok ? r.materialize.value.threeRepositories.ratioP50 : null, failed(r.materialize)));
  out.push(judge(TARGETS.manyTasksFailures, r.manyTasks.ok ? r.manyTasks.value.failures : null, failed(r.manyTasks)));
  if (r.cleanup.ok && r.cleanup.value.status === 'not_available') {
    out.push(judge(TARGETS.cleanupThroughput, null, { status: 'not_available', note: `archive route answers ${r.cleanup.value.probe.httpStatus} ${r.cleanup.value.probe.code}` }));
  } else {
    out.push(judge(TARGETS.cleanupThroughput, r.cleanup.ok && r.cleanup.value.status === 'measured' ? r.cleanup.value.throughputRatio : null, failed(r.cleanup)));
  }
  out.push(judge(TARGETS.growthRatio, r.growth.ok ? r.growth.value.ratioP50 : null, failed(r.growth)));
  if (r.exitDetection) {
    const e = r.exitDetection;
    out.push(judge(TARGETS.exitWatched, e.ok ? e.value.watched.p50 : null, failed(e)));
    out.push(judge(TARGETS.exitUnwatched, e.ok ? e.value.unwatched.p50 : null, failed(e)));
  }
  const worker = r.memory?.worker;
  const workerPeak = worker ? Math.max(worker.peakRssMb ?? 0, worker.hwmReset ? (worker.hwmMb ?? 0) : 0) : null;
  out.push(judge(TARGETS.workerRss, workerPeak, r.memory ? undefined : { status: 'error', note: 'memory not sampled' }));
  return out;
}
