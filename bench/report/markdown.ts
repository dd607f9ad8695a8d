/** bench/results/latest.md: the table first (also printed at the end of a run), then the evidence. */
import type { StepTimings } from '../direct-steps';
import type { HistoryProfile } from '../history';
import type { BenchResults, Outcome } from '../model';
import { describeTarget, type TargetResult } from '../targets';
import { mb, ms, statusWord, times } from './format';

function targetCells(targets: TargetResult[], id: string): [string, string] {
  const t = targets.find((x) => x.id === id);
  if (!t) return ['—', '—'];
  const note = t.note && t.status !== 'pass' && t.status !== 'miss' ? ` (${t.note})` : '';
  return [describeTarget(t), `**${statusWord(t.status)}**${note}`];
}

const failed = (o: Outcome<unknown>): string => (o.ok ? '' : `error: ${o.error}`);

export function renderTable(r: BenchResults): string {
  const rows: string[][] = [];
  const t = (id: string) => targetCells(r.targets, id);
  if (r.attach.ok) {
    const a = r.attach.value;
    rows.push([`Attach launch, p50 (n=${a.product.n} / ${a.floor.n}; p95 · p99)`, `${ms(a.product.p50)} (${ms(a.product.p95)} · ${ms(a.product.p99)})`, `${ms(a.floor.p50)} (${ms(a.floor.p95)} · ${ms(a.floor.p99)})`, times(a.ratioP50), ...t('attach_p50_ratio')]);
  } else rows.push(['Attach launch', failed(r.attach), '', '', ...t('attach_p50_ratio')]);
  if (r.materialize.ok) {
    for (const [v, id] of [[r.materialize.value.oneRepository, 'materialize_1_repo_p50_ratio'], [r.materialize.value.threeRepositories, 'materialize_3_repos_p50_ratio']] as const) {
      rows.push([`Materializing launch, ${v.repositories} repo${v.repositories > 1 ? 's' : ''}, p50 (n=${v.product.n} / ${v.floor.n}; p95)`, `${ms(v.product.p50)} (${ms(v.product.p95)})`, `${ms(v.floor.p50)} (${ms(v.floor.p95)})`, times(v.ratioP50), ...t(id)]);
    }
  } else rows.push(['Materializing launch', failed(r.materialize), '', '', ...t('materialize_1_repo_p50_ratio')]);
  if (r.manyTasks.ok) {
    const m = r.manyTasks.value;
    const codes = Object.keys(m.failureCodes).length ? ` (${Object.entries(m.failureCodes).map(([c, n]) => `${c}: ${n}`).join(', ')})` : '';
    rows.push([`${m.tasks} tasks on one repository launched at once`, `${m.wallSeconds.toFixed(2)} s wall, ${m.launchesPerSecond.toFixed(1)} launches/s, ${m.failures} failures${codes}; per launch p50 ${ms(m.latency.p50)}, max ${ms(m.latency.max)}`, '—', '—', ...t('many_tasks_failures')]);
  } else rows.push(['Many tasks on one repository', failed(r.manyTasks), '', '', ...t('many_tasks_failures')]);
  if (r.cleanup.ok && r.cleanup.value.status === 'measured') {
    const c = r.cleanup.value;
    rows.push([`Cleanup: archive ${c.tasks} tasks until every worktree is verified gone`, `${c.product.seconds.toFixed(2)} s, ${c.product.worktreesPerSecond.toFixed(1)} worktrees/s, ${c.product.failures} failures, ${c.product.leftBehind} left`, `${c.floor.seconds.toFixed(2)} s, ${c.floor.worktreesPerSecond.toFixed(1)} worktrees/s`, times(c.throughputRatio), ...t('cleanup_throughput_ratio')]);
  } else if (r.cleanup.ok && r.cleanup.value.status === 'not_available') {
    rows.push(['Cleanup: archive tasks until every worktree is verified gone', `not available: \`POST /v1/tasks/:id/archive\` answers ${r.cleanup.value.probe.httpStatus} ${r.cleanup.value.probe.code}`, '—', '—', ...t('cleanup_throughput_ratio')]);
  } else rows.push(['Cleanup', failed(r.cleanup), '', '', ...t('cleanup_throughput_ratio')]);
  if (r.growth.ok) {
    const g = r.growth.value;
    rows.push([`Attach p50 with ${g.small.tasksInDatabase.toLocaleString('en')} → ${g.large.tasksInDatabase.toLocaleString('en')} tasks (n=${g.small.attach.n} each)`, `${ms(g.small.attach.p50)} → ${ms(g.large.attach.p50)}`, '—', times(g.ratioP50), ...t('growth_attach_p50_ratio')]);
    rows.push([`A page of 50 tasks behind a cursor (\`GET /v1/tasks\`), p50 with ${g.small.tasksInDatabase.toLocaleString('en')} → ${g.large.tasksInDatabase.toLocaleString('en')} tasks (n=${g.small.listPage.n} each)`, `${ms(g.small.listPage.p50)} → ${ms(g.large.listPage.p50)}`, '—', times(g.listPageRatioP50), '—', '—']);
  } else rows.push(['Attach p50 at 100 vs 10,000 tasks', failed(r.growth), '', '', ...t('growth_attach_p50_ratio')]);
  if (r.memory) {
    const w = r.memory.worker;
    const g = r.memory.gateway;
    const idle = (name: string) => (r.memory!.afterStartMb[name] === null || r.memory!.afterStartMb[name] === undefined ? '' : `; ${mb(r.memory!.afterStartMb[name])} when ready, before any launch`);
    rows.push([`Worker peak RSS (${r.memory.window})`, `${mb(w.peakRssMb)} sampled, ${mb(w.hwmMb)} VmHWM${w.hwmReset ? '' : ' (since start)'}${idle('worker')}`, '—', '—', ...t('worker_peak_rss_mb')]);
    rows.push([`Gateway peak RSS (${r.memory.window})`, `${mb(g.peakRssMb)} sampled, ${mb(g.hwmMb)} VmHWM${g.hwmReset ? '' : ' (since start)'}${idle('gateway')}`, '—', '—', '—', '—']);
  }
  if (r.exitDetection?.ok) {
    const e = r.exitDetection.value;
    rows.push([`Agent exit recorded, starting process alive (n=${e.watched.n}; p95)`, `${ms(e.watched.p50)} (${ms(e.watched.p95)})`, '—', '—', ...t('exit_noticed_watched_p50_ms')]);
    rows.push([`Agent exit recorded, starting process SIGKILLed (n=${e.unwatched.n}; p95; checked every ${ms(e.checkEveryMs)})`, `${ms(e.unwatched.p50)} (${ms(e.unwatched.p95)})`, '—', '—', ...t('exit_noticed_unwatched_p50_ms')]);
  } else if (r.exitDetection) rows.push(['Agent exit recorded', failed(r.exitDetection), '', '', ...t('exit_noticed_watched_p50_ms')]);
  const header = ['Measure', 'Product', 'Floor', 'Ratio', 'Target', 'Result'];
  const line = (cells: string[]) => `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

function directLines(p: HistoryProfile | null, steps: StepTimings | undefined): string[] {
  if (!steps) return [];
  const parts = Object.entries(steps).filter(([name]) => name !== 'total').map(([name, s]) => `${name} ${ms(s.p50)}`);
  const total = steps.total?.p50;
  const orchestration = p && total !== undefined ? ` The profiled workflow took ${ms(p.workflowMs)} first→last event: about ${ms(p.workflowMs - total)} is orchestration (queues, workflow tasks, the SDK), not the work.` : '';
  return [`The same activities called directly in one process (p50 of ${steps.total?.n ?? 0}): ${parts.join(', ')}; together ${ms(total)}.${orchestration}`, ''];
}

function floorLine(parts: Record<string, number> | undefined): string[] {
  if (!parts) return [];
  return [`The floor's parts (p50): ${Object.entries(parts).map(([k, v]) => `${k} ${ms(v)}`).join(', ')}.`, ''];
}

function profileLines(name: string, p: HistoryProfile | null, steps?: StepTimings, floorParts?: Record<string, number>): string[] {
  if (!p) return [];
  return [
    `**${name}** (\`${p.workflowId}\`): ${p.httpMs === null ? '' : `HTTP ${ms(p.httpMs)}, `}workflow first→last event ${ms(p.workflowMs)} ` +
      `${p.httpMs === null ? '' : `(so ${ms(p.httpMs - p.workflowMs)} in the gateway, the client's start and result round trips)`}; ${p.events} history events, ` +
      `${p.workflowTasks} workflow tasks (queued ${ms(p.workflowTaskQueuedMs)}, running ${ms(p.workflowTaskRunningMs)} in the ${(p.workflowTasksRanIn ?? []).join(', ')}${p.eagerStart ? ', started eagerly' : ''} — local activities run inside them: ${p.localActivityMarkers} markers), ` +
      `${p.remoteActivities.length} host-queue activities [${p.remoteActivities.join(', ')}] (queued ${ms(p.activityQueuedMs)}, running ${ms(p.activityRunningMs)}), ${p.searchAttributeUpserts} search-attribute upserts.`,
    '',
    '<details><summary>history timeline</summary>',
    '',
    '```',
    ...p.timeline,
    '```',
    '</details>',
    '',
    ...directLines(p, steps),
    ...floorLine(floorParts),
  ];
}

function cpuTable(r: BenchResults): string[] {
  const rows: [string, Record<string, number>][] = [];
  if (r.attach.ok) rows.push(['Attach, product (per launch)', r.attach.value.cpuPerLaunchMs.product], ['Attach, floor (per launch)', r.attach.value.cpuPerLaunchMs.floor]);
  if (r.materialize.ok) {
    for (const v of [r.materialize.value.oneRepository, r.materialize.value.threeRepositories]) {
      rows.push([`Materialize ${v.repositories}, product (per launch)`, v.cpuPerLaunchMs.product], [`Materialize ${v.repositories}, floor (per launch)`, v.cpuPerLaunchMs.floor]);
    }
  }
  if (r.manyTasks.ok) rows.push([`${r.manyTasks.value.tasks} at once, product (per launch)`, r.manyTasks.value.cpuPerLaunchMs]);
  if (r.cleanup.ok && r.cleanup.value.status === 'measured') rows.push(['Cleanup, product (per worktree)', r.cleanup.value.cpuPerWorktreeMs.product], ['Cleanup, floor (per worktree)', r.cleanup.value.cpuPerWorktreeMs.floor]);
  if (rows.length === 0) return [];
  const groups = [...new Set(rows.flatMap(([, g]) => Object.keys(g)))];
  return [
    '## Where the CPU goes',
    '',
    'Milliseconds of CPU per unit of work, by process (a process counts the git and agent processes it started); this machine has two cores for all of them.',
    '',
    `| | ${groups.join(' | ')} | total |`,
    `| --- | ${groups.map(() => '---').join(' | ')} | --- |`,
    ...rows.map(([label, g]) => `| ${label} | ${groups.map((k) => (g[k] ?? 0).toFixed(1)).join(' | ')} | ${Object.values(g).reduce((a, b) => a + b, 0).toFixed(1)} |`),
    '',
    ...(r.manyTasks.ok ? [`Database transactions (pg_stat_database, approximate): ${r.manyTasks.value.transactionsPerLaunch} per launch with ${r.manyTasks.value.tasks} at once on one repository` + (r.cleanup.ok && r.cleanup.value.status === 'measured' ? `; ${r.cleanup.value.productTransactionsPerWorktree} per worktree in the product's cleanup.` : '.'), ''] : []),
  ];
}

export function renderMarkdown(r: BenchResults): string {
  const m = r.meta;
  const out: string[] = [
    `# task-workspaces benchmark`,
    '',
    `${m.startedAt} · ${m.durationSeconds.toFixed(0)} s · ${m.machine.cpus} × ${m.machine.cpuModel} · ${m.machine.memoryGb} GB · Node ${m.versions.node} · ${m.versions.git} · PostgreSQL ${m.versions.postgres} (${m.database}) · ${m.versions.temporalCli} · load average ${m.loadAverage.atStart.join(' / ')} at start, ${m.loadAverage.atEnd.join(' / ')} at end${m.quick ? ' · **QUICK RUN (reduced samples)**' : ''}`,
    '',
    'Latencies are medians (p50) of sequential HTTP launches until `201`; the floor does the same statements, git commands and process spawn in one Node process without Temporal or HTTP. Each ratio is measured in one run, interleaved.',
    '',
    renderTable(r),
    '',
    `Scenario order: ${m.order.join(' → ')}.`,
    '',
    ...m.notes.map((n) => `- ${n}`),
    '',
    '## Where the time goes (workflow histories; launches: the sample nearest the median)',
    '',
    ...profileLines('Attach', r.attach.ok ? r.attach.value.profile : null, r.attach.ok ? r.attach.value.directSteps : undefined, r.attach.ok ? r.attach.value.floorParts : undefined),
    ...profileLines('Materializing launch, 1 repository', r.materialize.ok ? r.materialize.value.profile : null, r.materialize.ok ? r.materialize.value.directSteps : undefined, r.materialize.ok ? r.materialize.value.oneRepository.floorParts : undefined),
    ...profileLines('Cleanup of one archived task, in the second product half', r.cleanup.ok && r.cleanup.value.status === 'measured' ? r.cleanup.value.profile : null),
  ];
  out.push(...cpuTable(r));
  if (r.gitLayer.ok) {
    out.push(
      '## The git layer',
      '',
      'One git process through git/git.ts (simple-git) and as a plain `execFile`, p50:',
      '',
      '| Command | Prints output | git/git.ts | plain git |',
      '| --- | --- | --- | --- |',
      ...r.gitLayer.value.map((c) => `| \`${c.command}\` | ${c.printsOutput ? 'yes' : 'no'} | ${ms(c.productLayerMs)} | ${ms(c.plainGitMs)} |`),
      '',
    );
  }
  if (r.temporalFloor.ok) {
    const t = r.temporalFloor.value;
    const attachFloor = r.attach.ok ? r.attach.value.floor.p50 : null;
    out.push(
      '## Temporal with no work',
      '',
      `A client starts a workflow and waits for its result, as the gateway does, against a worker in the benchmark process (p50 of ${t.samples}).`,
      '',
      "| Workflow | Polled by the worker | Started eagerly (the client shares the worker's connection, as the gateway's does) |",
      '| --- | --- | --- |',
      `| Empty | ${ms(t.emptyWorkflowMs)} | ${ms(t.eagerEmptyWorkflowMs)} |`,
      `| Two empty local activities (the shape of an attach) | ${ms(t.twoLocalActivitiesMs)} | ${ms(t.eagerTwoLocalActivitiesMs)} |`,
      '',
      ...(attachFloor
        ? [`Added to the attach floor (${ms(attachFloor)}), the eager two-step workflow alone is ${ms(attachFloor + t.eagerTwoLocalActivitiesMs)}, ${(1 + t.eagerTwoLocalActivitiesMs / attachFloor).toFixed(2)}× the floor, before any of the product's own work is orchestrated.`, '']
        : []),
    );
  }
  if (r.growth.ok) {
    const g = r.growth.value;
    out.push('## Attach path plans at the large database', '', `Rows: ${Object.entries(g.tableSizes).map(([k, v]) => `${k} ${v.toLocaleString('en')}`).join(', ')}.`, '');
    const large = g.plans.filter((p) => p.largeSeqScans.length > 0);
    const small = g.plans.filter((p) => p.seqScans.length > 0 && p.largeSeqScans.length === 0);
    out.push(
      large.length === 0 ? 'No statement of the attach path scans a table of 1,000 rows or more.' : `**Sequential scans of large tables**: ${large.map((p) => `${p.step} (${p.largeSeqScans.join(', ')})`).join('; ')}.`,
      small.length === 0 ? '' : ` Sequential scans of small tables (the planner's choice below 1,000 rows): ${small.map((p) => `${p.step} (${p.seqScans.join(', ')})`).join('; ')}.`,
      '',
    );
    for (const p of g.plans) out.push(`**${p.step}**: \`${p.sql}\``, '', '```', p.plan, '```', '');
    out.push('## List page plans at the large database', '');
    for (const p of g.listPlans ?? []) out.push(`**${p.step}**${p.largeSeqScans.length ? ` (sequential scan of ${p.largeSeqScans.join(', ')})` : ''}: \`${p.sql}\``, '', '```', p.plan, '```', '');
  }
  return out.join('\n') + '\n';
}
