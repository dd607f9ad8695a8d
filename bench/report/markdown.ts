/** bench/results/latest.md: the table first (also printed at the end of a run), then the evidence. */
import type { StepTimings } from '../direct-steps';
import type { HistoryProfile } from '../history';
import { REAPED_SUFFIX } from '../cpu';
import { describeShape } from '../engine-floor';
import type { BenchResults, Outcome } from '../model';
import type { LaunchComparison } from '../stats';
import { describeTarget, type TargetResult } from '../targets';
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

/** Issue 17's table: every row beside its bare floor and its engine floor. */
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
  if (r.resume?.ok)
    launchRow(
      `Resume of a session on a ready environment (stops its agent, starts one), p50`,
      r.resume.value,
      'resume_p50_vs_floors',
    );
  else rows.push(['Resume', r.resume ? failed(r.resume) : 'not run', '', '', '', ...t('resume_p50_vs_floors')]);
  if (r.sshAttach?.ok)
    launchRow(
      'SSH attach launch (sshd on 127.0.0.1; floor: the same remote commands over one connection), p50',
      r.sshAttach.value,
      'ssh_attach_p50_vs_floors',
    );
  else
    rows.push([
      'SSH attach',
      r.sshAttach ? failed(r.sshAttach) : 'not run',
      '',
      '',
      '',
      ...t('ssh_attach_p50_vs_floors'),
    ]);
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

function directLines(p: HistoryProfile | null, steps: StepTimings | undefined): string[] {
  if (!steps) return [];
  const parts = Object.entries(steps)
    .filter(([name]) => name !== 'total')
    .map(([name, s]) => `${name} ${ms(s.p50)}`);
  const total = steps.total?.p50;
  const orchestration =
    p && total !== undefined
      ? ` The profiled workflow took ${ms(p.workflowMs)} first→last event: about ${ms(p.workflowMs - total)} is orchestration (queues, workflow tasks, the SDK), not the work.`
      : '';
  return [
    `The same activities called directly in one process (p50 of ${steps.total?.n ?? 0}): ${parts.join(', ')}; together ${ms(total)}.${orchestration}`,
    '',
  ];
}

function floorLine(parts: Record<string, number> | undefined): string[] {
  if (!parts) return [];
  return [
    `The floor's parts (p50): ${Object.entries(parts)
      .map(([k, v]) => `${k} ${ms(v)}`)
      .join(', ')}.`,
    '',
  ];
}

function profileLines(
  name: string,
  p: HistoryProfile | null,
  steps?: StepTimings,
  floorParts?: Record<string, number>,
): string[] {
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
  if (r.attach.ok)
    rows.push(
      ['Attach, product (per launch)', r.attach.value.cpuPerLaunchMs.product],
      ['Attach, floor (per launch)', r.attach.value.cpuPerLaunchMs.floor],
    );
  if (r.materialize.ok) {
    for (const v of [r.materialize.value.oneRepository, r.materialize.value.threeRepositories]) {
      rows.push(
        [`Materialize ${v.repositories}, product (per launch)`, v.cpuPerLaunchMs.product],
        [`Materialize ${v.repositories}, floor (per launch)`, v.cpuPerLaunchMs.floor],
      );
    }
  }
  if (r.resume?.ok)
    rows.push(
      ['Resume, product (per resume)', r.resume.value.cpuPerLaunchMs.product],
      ['Resume, floor (per resume)', r.resume.value.cpuPerLaunchMs.floor],
    );
  if (r.sshAttach?.ok)
    rows.push(
      ['SSH attach, product (per launch)', r.sshAttach.value.cpuPerLaunchMs.product],
      ['SSH attach, floor (per launch)', r.sshAttach.value.cpuPerLaunchMs.floor],
    );
  if (r.manyTasks.ok)
    rows.push([`${r.manyTasks.value.tasks} at once, product (per launch)`, r.manyTasks.value.cpuPerLaunchMs]);
  if (r.cleanup.ok && r.cleanup.value.status === 'measured')
    rows.push(
      ['Single archives, product (per worktree)', r.cleanup.value.cpuPerWorktreeMs.product],
      ['Single archives, floor (per worktree)', r.cleanup.value.cpuPerWorktreeMs.floor],
    );
  if (r.boardDelete?.ok)
    rows.push(
      ['Board delete, product (per worktree)', r.boardDelete.value.cpuPerWorktreeMs.product],
      ['Board delete, floor (per worktree)', r.boardDelete.value.cpuPerWorktreeMs.floor],
    );
  if (rows.length === 0) return [];
  // A reaped-children column only where a process reaped any.
  const groups = [...new Set(rows.flatMap(([, g]) => Object.keys(g)))].filter(
    (k) => !k.endsWith(REAPED_SUFFIX) || rows.some(([, g]) => (g[k] ?? 0) > 0),
  );
  return [
    '## Where the CPU goes',
    '',
    'Milliseconds of CPU per unit of work, by process (a process counts the git and agent processes it started); this machine has two cores for all of them. A "reaped children" column is the part of the one before it that processes it started used (git, agents, their shims), counted when they ended and were reaped: an agent\'s shim started at launch counts in the cleanup that stops it. The total does not count it twice.',
    '',
    `| | ${groups.join(' | ')} | total |`,
    `| --- | ${groups.map(() => '---').join(' | ')} | --- |`,
    ...rows.map(
      ([label, g]) =>
        `| ${label} | ${groups.map((k) => (g[k] ?? 0).toFixed(1)).join(' | ')} | ${Object.entries(g)
          .filter(([k]) => !k.endsWith(REAPED_SUFFIX))
          .reduce((a, [, v]) => a + v, 0)
          .toFixed(1)} |`,
    ),
    '',
    ...(r.manyTasks.ok
      ? [
          `Database transactions (pg_stat_database, approximate): ${r.manyTasks.value.transactionsPerLaunch} per launch with ${r.manyTasks.value.tasks} at once on one repository` +
            (r.cleanup.ok && r.cleanup.value.status === 'measured'
              ? `; ${r.cleanup.value.productTransactionsPerWorktree} per worktree in the product's cleanup.`
              : '.'),
          '',
        ]
      : []),
  ];
}

export function renderMarkdown(r: BenchResults): string {
  const m = r.meta;
  const out: string[] = [
    `# task-workspaces benchmark`,
    '',
    `${m.startedAt} · ${m.durationSeconds.toFixed(0)} s · ${m.machine.cpus} × ${m.machine.cpuModel} · ${m.machine.memoryGb} GB · Node ${m.versions.node} · ${m.versions.git} · PostgreSQL ${m.versions.postgres} (${m.database}) · ${m.versions.temporalCli} · load average ${m.loadAverage.atStart.join(' / ')} at start, ${m.loadAverage.atEnd.join(' / ')} at end${m.quick ? ' · **QUICK RUN (reduced samples)**' : ''}`,
    '',
    "Latencies are medians (p50) of sequential HTTP launches until `201`. The bare floor does the same statements, git (or ssh) commands and process spawn in one Node process without Temporal or HTTP; the engine floor is a workflow of the product's own shape (read from its history: local activities, activities, children, update-with-start, eager or not) with no work in it, on a worker in the benchmark process against the same dev server. Product, bare floor and engine floor are interleaved in one run; issue 17 judges each launch by product / (bare + engine).",
    '',
    renderTable(r),
    '',
    ...(m.commit
      ? [`Measured commit: \`${m.commit.measured}\`${m.commit.clean ? '' : ' (with uncommitted changes)'}.`, '']
      : []),
    `Scenario order: ${m.order.join(' → ')}.`,
    '',
    ...m.notes.map((n) => `- ${n}`),
    '',
    '## Where the time goes (workflow histories; launches: the sample nearest the median)',
    '',
    ...profileLines(
      'Attach',
      r.attach.ok ? r.attach.value.profile : null,
      r.attach.ok ? r.attach.value.directSteps : undefined,
      r.attach.ok ? r.attach.value.floorParts : undefined,
    ),
    ...profileLines(
      'Materializing launch, 1 repository',
      r.materialize.ok ? r.materialize.value.profile : null,
      r.materialize.ok ? r.materialize.value.directSteps : undefined,
      r.materialize.ok ? r.materialize.value.oneRepository.floorParts : undefined,
    ),
    ...profileLines(
      'Resume',
      r.resume?.ok ? r.resume.value.profile : null,
      undefined,
      r.resume?.ok ? r.resume.value.floorParts : undefined,
    ),
    ...profileLines(
      'SSH attach',
      r.sshAttach?.ok ? r.sshAttach.value.profile : null,
      undefined,
      r.sshAttach?.ok ? r.sshAttach.value.floorParts : undefined,
    ),
    ...(r.sshAttach?.ok
      ? [
          `An empty remote script (\`:\`) over the pooled connection takes ${ms(r.sshAttach.value.emptyCommandMs)} (p50 of 10): every remote command pays the target's login shell (bash under sshd reads ~/.bashrc; on this machine root's runs \`pyenv init\`), and an attach runs two.`,
          '',
        ]
      : []),
    ...profileLines(
      'Cleanup of one archived task, in the second product half',
      r.cleanup.ok && r.cleanup.value.status === 'measured' ? r.cleanup.value.profile : null,
    ),
    ...profileLines('Board delete (the parent workflow)', r.boardDelete?.ok ? r.boardDelete.value.profile : null),
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
      ...r.gitLayer.value.map(
        (c) =>
          `| \`${c.command}\` | ${c.printsOutput ? 'yes' : 'no'} | ${ms(c.productLayerMs)} | ${ms(c.plainGitMs)} |`,
      ),
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
        ? [
            `Added to the attach floor (${ms(attachFloor)}), the eager two-step workflow alone is ${ms(attachFloor + t.eagerTwoLocalActivitiesMs)}, ${(1 + t.eagerTwoLocalActivitiesMs / attachFloor).toFixed(2)}× the floor, before any of the product's own work is orchestrated.`,
            '',
          ]
        : []),
    );
  }
  if (r.growth.ok) {
    const g = r.growth.value;
    out.push(
      '## Attach path plans at the large database',
      '',
      `Rows: ${Object.entries(g.tableSizes)
        .map(([k, v]) => `${k} ${v.toLocaleString('en')}`)
        .join(', ')}.`,
      '',
    );
    const large = g.plans.filter((p) => p.largeSeqScans.length > 0);
    const small = g.plans.filter((p) => p.seqScans.length > 0 && p.largeSeqScans.length === 0);
    out.push(
      large.length === 0
        ? 'No statement of the attach path scans a table of 1,000 rows or more.'
        : `**Sequential scans of large tables**: ${large.map((p) => `${p.step} (${p.largeSeqScans.join(', ')})`).join('; ')}.`,
      small.length === 0
        ? ''
        : ` Sequential scans of small tables (the planner's choice below 1,000 rows): ${small.map((p) => `${p.step} (${p.seqScans.join(', ')})`).join('; ')}.`,
      '',
    );
    for (const p of g.plans) out.push(`**${p.step}**: \`${p.sql}\``, '', '```', p.plan, '```', '');
    out.push('## List page plans at the large database', '');
    for (const p of g.listPlans ?? [])
      out.push(
        `**${p.step}**${p.largeSeqScans.length ? ` (sequential scan of ${p.largeSeqScans.join(', ')})` : ''}: \`${p.sql}\``,
        '',
        '```',
        p.plan,
        '```',
        '',
      );
  }
  return out.join('\n') + '\n';
}
