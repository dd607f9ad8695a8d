/** bench/results/latest.md: the table first (also printed at the end of a run), then the evidence. */
import type { BenchResults } from '../model';
import { cpuTable } from './cpu-table';
import { ms } from './format';
import { profileLines } from './profiles';
import { renderTable } from './table';

export function renderMarkdown(r: BenchResults): string {
  const m = r.meta;
  const out: string[] = [
    `# task-workspaces benchmark`,
    '',
    `${m.startedAt} · ${m.durationSeconds.toFixed(0)} s · ${m.machine.cpus} × ${m.machine.cpuModel} · ${m.machine.memoryGb} GB · Node ${m.versions.node} · ${m.versions.git} · PostgreSQL ${m.versions.postgres} (${m.database}) · ${m.versions.temporalCli} · load average ${m.loadAverage.atStart.join(' / ')} at start, ${m.loadAverage.atEnd.join(' / ')} at end${m.quick ? ' · **QUICK RUN (reduced samples)**' : ''}`,
    '',
    "Latencies are medians (p50) of sequential HTTP launches until `201`. The bare floor does the same statements, git (or ssh) commands and process spawn in one Node process without Temporal or HTTP; the engine floor is a workflow of the product's own shape (read from its history: local activities, activities, children, update-with-start, eager or not) with no work in it, on a worker in the benchmark process against the same dev server. Product, bare floor and engine floor are interleaved in one run; each launch is judged by product / (bare + engine).",
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
      'Container attach',
      r.containerAttach?.ok ? r.containerAttach.value.profile : null,
      undefined,
      r.containerAttach?.ok ? r.containerAttach.value.floorParts : undefined,
    ),
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
