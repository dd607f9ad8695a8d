/**
 * The results table of bench/results/latest.md: every measure beside its bare floor,
 * its engine floor and its target. Apart from the evidence below it because a run also prints it
 * alone at its end (bench/run.ts).
 */
import { describeShape } from '../workflow-shape';
import type { BenchResults, Outcome } from '../model';
import type { LaunchComparison } from '../stats';
import { describeTarget, type TargetResult } from '../targets';
import { consoleRows } from './console-table';
import { mb, ms, statusWord, times } from './format';

function targetCells(targets: TargetResult[], id: string): [string, string] {
  const t = targets.find((x) => x.id === id);
  if (!t) return ['—', '—'];
  const note = t.note && t.status !== 'pass' ? ` (${t.note})` : '';
  return [describeTarget(t), `**${statusWord(t.status)}**${note}`];
}

const failed = (o: Outcome<unknown>): string => (o.ok ? '' : `error: ${o.error}`);

const engineCell = (c: LaunchComparison): string =>
  c.engine ? `${ms(c.engine.p50)}${c.engineShape ? ` (${describeShape(c.engineShape)})` : ''}` : '—';
const ratioCell = (c: LaunchComparison): string =>
  `${times(c.ratioP50)} of bare; **${times(c.ratioToFloorsP50)}** of bare + engine`;

/** The results table: every row beside its bare floor and its engine floor. */
export function renderTable(r: BenchResults): string {
  const rows: string[][] = [];
  const t = (id: string) => targetCells(r.targets, id);
  const launchRow = (label: string, c: LaunchComparison, id: string) => {
    const codes = c.failures
      ? `; ${c.failures} failures (${Object.entries(c.failureCodes)
          .map(([k, n]) => `${k}: ${n}`)
          .join(', ')})`
      : '';
    rows.push([
      `${label} (n=${c.product.n} / ${c.floor.n} / ${c.engine?.n ?? 0}; p95)`,
      `${ms(c.product.p50)} (${ms(c.product.p95)})${codes}`,
      `${ms(c.floor.p50)} (${ms(c.floor.p95)})`,
      engineCell(c),
      ratioCell(c),
      ...t(id),
    ]);
  };
  if (r.attach.ok) launchRow('Attach launch, p50', r.attach.value, 'attach_p50_vs_floors');
  else rows.push(['Attach launch', failed(r.attach), '', '', '', ...t('attach_p50_vs_floors')]);
  if (r.materialize.ok) {
    for (const [v, id] of [
      [r.materialize.value.oneRepository, 'materialize_1_repo_p50_vs_floors'],
      [r.materialize.value.threeRepositories, 'materialize_3_repos_p50_vs_floors'],
    ] as const) {
      launchRow(`First launch, ${v.repositories} repo${v.repositories > 1 ? 's' : ''}, p50`, v, id);
    }
  } else rows.push(['First launch', failed(r.materialize), '', '', '', ...t('materialize_1_repo_p50_vs_floors')]);
  /** A launch scenario's row, or the reason it has none (failed, or not run). */
  const optionalLaunchRow = <C extends LaunchComparison>(
    outcome: { ok: true; value: C } | { ok: false; error: string; seconds: number } | undefined,
    name: string,
    label: (c: C) => string,
    id: string,
  ) => {
    if (outcome?.ok) launchRow(label(outcome.value), outcome.value, id);
    else rows.push([name, outcome ? failed(outcome) : 'not run', '', '', '', ...t(id)]);
  };
  optionalLaunchRow(
    r.resume,
    'Resume',
    () => 'Resume of a session on a ready environment (stops its agent, starts one), p50',
    'resume_p50_vs_floors',
  );
  optionalLaunchRow(
    r.sshAttach,
    'SSH attach',
    () => 'SSH attach launch (sshd on 127.0.0.1; floor: the same remote commands over one connection), p50',
    'ssh_attach_p50_vs_floors',
  );
  optionalLaunchRow(
    r.containerAttach,
    'Container attach',
    (c) => `Container attach launch (${c.image} under Podman; floor: \`podman exec -d\` in the same container), p50`,
    'container_attach_p50_vs_floors',
  );
  if (r.cleanup.ok && r.cleanup.value.status === 'measured') {
    const c = r.cleanup.value;
    const engine = c.engine?.shape
      ? `${c.engine.seconds.toFixed(2)} s for ${c.tasks} (${describeShape(c.engine.shape)}, half at once)`
      : '—';
    rows.push([
      `Single archives of ${c.tasks} tasks until every worktree is verified gone (throughput)`,
      `${c.product.seconds.toFixed(2)} s, ${c.product.worktreesPerSecond.toFixed(1)} /s, ${c.product.failures} failures, ${c.product.leftBehind} left`,
      `${c.floor.seconds.toFixed(2)} s, ${c.floor.worktreesPerSecond.toFixed(1)} /s`,
      engine,
      `${times(c.throughputRatio)} of bare; **${times(c.throughputRatioToFloors)}** of bare + engine`,
      ...t('archive_throughput_vs_floors'),
    ]);
  } else if (r.cleanup.ok && r.cleanup.value.status === 'not_available') {
    rows.push([
      'Single archives',
      `not available: archive route answers ${r.cleanup.value.probe.httpStatus}`,
      '—',
      '—',
      '—',
      ...t('archive_throughput_vs_floors'),
    ]);
  } else rows.push(['Single archives', failed(r.cleanup), '', '', '', ...t('archive_throughput_vs_floors')]);
  if (r.boardDelete?.ok) {
    const b = r.boardDelete.value;
    const engine = b.engine ? `${b.engine.seconds.toFixed(2)} s (${describeShape(b.engine.shape)})` : '—';
    const codes = Object.keys(b.product.failureCodes).length
      ? ` (${Object.entries(b.product.failureCodes)
          .map(([k, n]) => `${k}: ${n}`)
          .join(', ')})`
      : '';
    rows.push([
      `Board delete of ${b.tasks} tasks until every worktree is verified gone (throughput)`,
      `${b.product.seconds.toFixed(2)} s, ${b.product.worktreesPerSecond.toFixed(1)} /s, ${b.product.failures} failures${codes}, ${b.product.leftBehind} left; 202 after ${ms(b.product.acceptedMs)}`,
      `${b.floor.seconds.toFixed(2)} s, ${b.floor.worktreesPerSecond.toFixed(1)} /s`,
      engine,
      `**${times(b.throughputRatio)}** of bare`,
      ...t('board_delete_throughput_vs_bare'),
    ]);
  } else
    rows.push([
      'Board delete',
      r.boardDelete ? failed(r.boardDelete) : 'not run',
      '',
      '',
      '',
      ...t('board_delete_throughput_vs_bare'),
    ]);
  if (r.idleRelease?.ok) {
    const v = r.idleRelease.value;
    const codes = (c: Record<string, number>) =>
      Object.keys(c).length
        ? ` (${Object.entries(c)
            .map(([k, n]) => `${k}: ${n}`)
            .join(', ')})`
        : '';
    const rel = v.release;
    rows.push([
      `Idle release of ${v.tasks} tasks (a modified and an untracked file each) until every job succeeded and every worktree is verified gone (throughput)`,
      `${rel.product.seconds.toFixed(2)} s, ${rel.product.tasksPerSecond.toFixed(1)} /s, ${rel.product.failures} failures${codes(rel.product.failureCodes)}, ${rel.product.leftBehind} left; answered after ${rel.product.acceptedMs.map(ms).join(' and ')}`,
      `${rel.floor.seconds.toFixed(2)} s, ${rel.floor.tasksPerSecond.toFixed(1)} /s (add, stash create, update-ref, remove --force)`,
      '—',
      `**${times(rel.throughputRatio)}** of bare`,
      ...t('idle_release_throughput_vs_bare'),
    ]);
    const res = v.restore;
    rows.push([
      `Restore: the next launch of each of the ${v.tasks} released tasks until \`201\`, ${res.concurrency} at once (throughput)`,
      `${res.product.seconds.toFixed(2)} s, ${res.product.tasksPerSecond.toFixed(1)} /s, ${res.product.failures} failures${codes(res.product.failureCodes)}; restore ${Object.entries(
        res.product.restoreOutcomes,
      )
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')}; ${res.product.verified.identical}/${res.product.verified.sampled} sampled byte-identical`,
      `${res.floor.seconds.toFixed(2)} s, ${res.floor.tasksPerSecond.toFixed(1)} /s (worktree add, diff --binary, apply); ${res.floor.verified.identical}/${res.floor.verified.sampled} identical`,
      '—',
      `**${times(res.throughputRatio)}** of bare`,
      ...t('idle_restore_throughput_vs_bare'),
    ]);
  } else
    rows.push([
      'Idle release and restore',
      r.idleRelease ? failed(r.idleRelease) : 'not run',
      '',
      '',
      '',
      ...t('idle_release_throughput_vs_bare'),
    ]);
  if (r.diskMeasurement?.ok) {
    const d = r.diskMeasurement.value;
    rows.push([
      `Attach p50 with ${d.workspaces.toLocaleString('en')} workspaces on the host, disk measurement running (n=${d.on.n}; ${d.rounds.on} rounds ended in its blocks${d.rounds.roundMs ? `, a round of every workspace ${ms(d.rounds.roundMs)}` : ''}) vs not (n=${d.off.n}; ${d.rounds.off} rounds)`,
      `${ms(d.on.p50)} (p95 ${ms(d.on.p95)}) vs ${ms(d.off.p50)} (p95 ${ms(d.off.p95)})${d.failures ? `; ${d.failures} failures` : ''}`,
      '—',
      '—',
      `**${times(d.ratioP50)}**`,
      ...t('attach_with_disk_measurement_ratio'),
    ]);
  } else
    rows.push([
      'Attach beside the disk measurement',
      r.diskMeasurement ? failed(r.diskMeasurement) : 'not run',
      '',
      '',
      '',
      ...t('attach_with_disk_measurement_ratio'),
    ]);
  if (r.supervision?.ok) {
    const s = r.supervision.value;
    const kind = (role: string) => s.kinds.find((k) => k.role === role);
    const [now, before, floor, wrapper] = [kind('now'), kind('before'), kind('floor'), kind('wrapper')];
    const mb2 = (x: number | undefined) => (x === undefined ? '—' : `${x.toFixed(2)} MB`);
    const ms2 = (x: number | undefined) => (x === undefined ? '—' : `${x.toFixed(2)} ms`);
    rows.push([
      `Per-agent supervision: the C supervisor's PSS once started, p50 (n=${s.agents}; max)`,
      `${mb2(now?.pssMb.p50)} (${mb2(now?.pssMb.max)}), RSS ${mb2(now?.rssMb.p50)}; the node shim before: ${mb2(before?.pssMb.p50)}`,
      `\`sh -c 'exec sleep 60'\` ${mb2(floor?.pssMb.p50)}; a \`sh\` wrapper ${mb2(wrapper?.pssMb.p50)}`,
      '—',
      '—',
      ...t('supervisor_pss_p50_mb'),
    ]);
    rows.push([
      `Per-agent supervision: the C supervisor's CPU to start, raw (its exec out of the process starter included; schedstat ~200 ms after the start), p50 (n=${s.agents}; max)`,
      `${ms2(now?.cpuMs.p50)} (${ms2(now?.cpuMs.max)}); the node shim before: ${ms2(before?.cpuMs.p50)}`,
      `\`sh -c 'exec sleep 60'\` ${ms2(floor?.cpuMs.p50)}; a \`sh\` wrapper ${ms2(wrapper?.cpuMs.p50)}`,
      '—',
      `${ms2(now?.cpuAboveFloorMs)} above the \`exec sleep\` floor`,
      ...t('supervisor_start_cpu_p50_ms'),
    ]);
  } else
    rows.push([
      'Per-agent supervision',
      r.supervision ? failed(r.supervision) : 'not run',
      '',
      '',
      '',
      ...t('supervisor_pss_p50_mb'),
    ]);
  if (r.agentsAlive?.ok) {
    const a = r.agentsAlive.value;
    const starter = (x: number | null) => (x === null ? '' : `, its process starter ${x.toFixed(1)} MB beside`);
    for (const [name, id] of [
      ['worker', 'worker_rss_100_agents_ratio'],
      ['gateway', 'gateway_rss_100_agents_ratio'],
    ] as const) {
      rows.push([
        `${name === 'worker' ? 'Worker' : 'Gateway'} RSS with ${a.alive} agents alive vs none (median of ${a.withAgents[name].samples} samples over ${ms(a.sampleMs)}, ${ms(a.settleMs)} after the launches or kills; after a warm-up round of as many launches)`,
        `${a.withAgents[name].rssMb.toFixed(1)} MB${starter(a.withAgents[name].starterRssMb)} vs ${a.none[name].rssMb.toFixed(1)} MB${starter(a.none[name].starterRssMb)}; ${a.afterKill[name].rssMb.toFixed(1)} MB once killed again${name === 'gateway' && a.supervisorsPssMb ? `; the ${a.supervisorsPssMb.n} supervisors it started: ${a.supervisorsPssMb.p50.toFixed(2)} MB PSS each (p50), ${a.supervisorsPssMb.total.toFixed(1)} MB together` : ''}${a.launchFailures ? `; ${a.launchFailures} launches failed` : ''}`,
        '—',
        '—',
        `**${times(a.ratio[name])}**`,
        ...t(id),
      ]);
    }
  } else
    rows.push([
      '100 agents alive',
      r.agentsAlive ? failed(r.agentsAlive) : 'not run',
      '',
      '',
      '',
      ...t('worker_rss_100_agents_ratio'),
    ]);
  if (r.taskDiff?.ok) {
    const x = r.taskDiff.value;
    rows.push([
      `Diff of ${x.files.toLocaleString('en')} changed files: \`GET /v1/tasks/:id/diff\` p50 (n=${x.product.n}; p95)`,
      `${ms(x.product.p50)} (${ms(x.product.p95)})`,
      `\`git diff --numstat\` ${ms(x.gitNumstat.p50)} + API round trip ${ms(x.roundTrip.p50)}`,
      '—',
      `**${times(x.ratioP50)}** of the floor`,
      '—',
      '—',
    ]);
  } else rows.push(['Diff of 1,000 changed files', r.taskDiff ? failed(r.taskDiff) : 'not run', '', '', '', '—', '—']);
  rows.push(...consoleRows(r, t));
  if (r.merge?.ok) {
    const x = r.merge.value;
    for (const m of x.strategies) {
      const parts = Object.entries(m.gitParts)
        .map(([k, v]) => `${k} ${ms(v)}`)
        .join(', ');
      rows.push([
        `Merge (${m.strategy}) of a 1-repository task with ${x.commits} commits, its checkout brought forward: \`POST /v1/tasks/:id/merge\` (\`Prefer: wait\`) p50 (n=${m.product.n} / ${m.git.n} / ${m.engine.n}; p95)`,
        `${ms(m.product.p50)} (${ms(m.product.p95)})`,
        `git by hand ${ms(m.git.p50)} (${parts}; \`read-tree -m -u\` in the checkout included)`,
        `${ms(m.engine.p50)} (1 activity, polled); the merge's own shape ${ms(m.engineProductShape.p50)} (${describeShape(m.productShape)}), beside`,
        `**${times(m.ratioToFloorsP50)}** of git + engine`,
        ...t(m.strategy === 'squash' ? 'merge_squash_p50_vs_floors' : 'merge_merge_p50_vs_floors'),
      ]);
    }
  } else
    rows.push([
      'Merge of a task with 20 commits',
      r.merge ? failed(r.merge) : 'not run',
      '',
      '',
      '',
      ...t('merge_squash_p50_vs_floors'),
    ]);
  if (r.mergesAtOnce?.ok) {
    const x = r.mergesAtOnce.value;
    const codes = Object.keys(x.failureCodes).length
      ? ` (${Object.entries(x.failureCodes)
          .map(([k, n]) => `${k}: ${n}`)
          .join(', ')})`
      : '';
    rows.push([
      `${x.merges} merges (squash) at once into one base, each task changing a file of its own (${x.rounds.length} round${x.rounds.length === 1 ? '' : 's'}, median wall)`,
      x.failures > 0
        ? `failed: ${x.failures} merges did not land${codes}`
        : `${(x.atOnceMedianMs / 1000).toFixed(2)} s wall; per merge p50 ${ms(x.atOnceLatency.p50)}, max ${ms(x.atOnceLatency.max)}`,
      `${x.merges} merges one after another: ${(x.sequentialMedianMs / 1000).toFixed(2)} s (p50 ${ms(x.sequentialLatency.p50)} each)`,
      '—',
      x.wallRatio === null ? '—' : `**${times(x.wallRatio)}** wall`,
      ...t('merges_at_once_wall_vs_sequential'),
    ]);
  } else
    rows.push([
      '20 merges at once into one base',
      r.mergesAtOnce ? failed(r.mergesAtOnce) : 'not run',
      '',
      '',
      '',
      ...t('merges_at_once_wall_vs_sequential'),
    ]);
  if (r.tracing?.ok) {
    const x = r.tracing.value;
    const spans = (m: 'off' | 'loaded' | 'on') =>
      `${x.exported[m].spans.toLocaleString('en')} spans in ${x.exported[m].requests} exports for ${x.exported[m].launches} launches`;
    rows.push([
      `Attach p50, tracing exporting every span (OTLP/HTTP JSON to a local sink that discards; n=${x.on.n}) vs tracing not loaded (OTEL_EXPORTER_OTLP_ENDPOINT unset, the default; n=${x.off.n}); the worker and the gateway restarted before each block`,
      `${ms(x.on.p50)} (p95 ${ms(x.on.p95)}; ${spans('on')}) vs ${ms(x.off.p50)} (p95 ${ms(x.off.p95)}); loaded with nothing sampled (OTEL_TRACES_SAMPLER=always_off; n=${x.loaded.n}): ${ms(x.loaded.p50)}, ${times(x.loadedRatioP50)} (${spans('loaded')})${x.failures ? `; ${x.failures} failures` : ''}`,
      '—',
      '—',
      `**${times(x.ratioP50)}**`,
      ...t('attach_tracing_exporting_vs_not_loaded_ratio'),
    ]);
  } else
    rows.push([
      'Attach with tracing exporting vs not loaded',
      r.tracing ? failed(r.tracing) : 'not run',
      '',
      '',
      '',
      ...t('attach_tracing_exporting_vs_not_loaded_ratio'),
    ]);
  if (r.manyTasks.ok) {
    const m = r.manyTasks.value;
    const codes = Object.keys(m.failureCodes).length
      ? ` (${Object.entries(m.failureCodes)
          .map(([c, n]) => `${c}: ${n}`)
          .join(', ')})`
      : '';
    rows.push([
      `${m.tasks} first launches at once on one repository`,
      `${m.wallSeconds.toFixed(2)} s wall, ${m.failures} failures${codes}; per launch p50 ${ms(m.latency.p50)}, max ${ms(m.latency.max)}`,
      m.floor ? `${m.floor.wallSeconds.toFixed(2)} s wall (worktree adds in turn)` : '—',
      '—',
      `**${times(m.wallRatio)}** wall`,
      ...t('many_tasks_wall_vs_floor'),
    ]);
    rows.push([
      `${m.tasks} first launches at once: failures`,
      `${m.failures}`,
      '—',
      '—',
      '—',
      ...t('many_tasks_failures'),
    ]);
  } else
    rows.push(['Many first launches on one repository', failed(r.manyTasks), '', '', '', ...t('many_tasks_failures')]);
  if (r.growth.ok) {
    const g = r.growth.value;
    const seeded = g.large.sessionsInDatabase
      ? `; ${g.large.sessionsInDatabase.toLocaleString('en')} sessions rows, seeded in ${g.large.seedSeconds} s`
      : '';
    rows.push([
      `Attach p50 with ${g.small.tasksInDatabase.toLocaleString('en')} → ${g.large.tasksInDatabase.toLocaleString('en')} tasks (n=${g.small.attach.n} each${seeded})`,
      `${ms(g.small.attach.p50)} → ${ms(g.large.attach.p50)}`,
      '—',
      '—',
      `**${times(g.ratioP50)}**`,
      ...t('growth_attach_p50_ratio'),
    ]);
    rows.push([
      `A page of 50 tasks behind a cursor, p50 with ${g.small.tasksInDatabase.toLocaleString('en')} → ${g.large.tasksInDatabase.toLocaleString('en')} tasks`,
      `${ms(g.small.listPage.p50)} → ${ms(g.large.listPage.p50)}`,
      '—',
      '—',
      times(g.listPageRatioP50),
      '—',
      '—',
    ]);
  } else
    rows.push(['Attach at a small vs a large database', failed(r.growth), '', '', '', ...t('growth_attach_p50_ratio')]);
  if (r.exitDetection?.ok) {
    const e = r.exitDetection.value;
    rows.push([
      `Agent exit recorded, starting process alive (n=${e.watched.n}; p95)`,
      `${ms(e.watched.p50)} (${ms(e.watched.p95)})`,
      '—',
      '—',
      '—',
      ...t('exit_noticed_watched_p50_ms'),
    ]);
    rows.push([
      `Agent exit recorded, starting process SIGKILLed (n=${e.unwatched.n}; p95; checked every ${ms(e.checkEveryMs)})`,
      `${ms(e.unwatched.p50)} (${ms(e.unwatched.p95)})`,
      '—',
      '—',
      '—',
      ...t('exit_noticed_unwatched_p50_ms'),
    ]);
  } else if (r.exitDetection)
    rows.push(['Agent exit recorded', failed(r.exitDetection), '', '', '', ...t('exit_noticed_watched_p50_ms')]);
  if (r.memory) {
    const byScenario = (peaks?: Record<string, number>) =>
      peaks && Object.keys(peaks).length > 0
        ? `; peak by scenario: ${Object.entries(peaks)
            .map(([name, v]) => `${name} ${mb(v)}`)
            .join(', ')}`
        : '';
    const idle = (name: string) =>
      r.memory!.afterStartMb[name] === null || r.memory!.afterStartMb[name] === undefined
        ? ''
        : `; ${mb(r.memory!.afterStartMb[name])} when ready, before any launch`;
    for (const [name, id] of [
      ['worker', 'worker_peak_rss_mb'],
      ['gateway', 'gateway_peak_rss_mb'],
    ] as const) {
      const w = r.memory[name];
      rows.push([
        `${name === 'worker' ? 'Worker' : 'Gateway'} peak RSS (${r.memory.window})`,
        `${mb(w.peakRssMb)} sampled, ${mb(w.hwmMb)} VmHWM${w.hwmReset ? '' : ' (since start)'}${idle(name)}${w.starterPeakRssMb ? `; its process starter besides: ${mb(w.starterPeakRssMb)} RSS, ${mb(w.starterPssMb ?? null)} PSS` : ''}${byScenario(w.peakByScenarioMb)}`,
        '—',
        '—',
        '—',
        ...t(id),
      ]);
    }
  }
  const header = ['Measure', 'Product', 'Bare floor', 'Engine floor (its shape)', 'Ratio', 'Target', 'Result'];
  const line = (cells: string[]) => `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}
