/**
 * bench/results/latest.svg, hand-written: product vs floor p50 bars for attach and the two
 * materializing launches, each with its ratio and target, then one line per other figure.
 */
import type { BenchResults } from '../model';
import type { LaunchComparison } from '../stats';
import { describeTarget, type TargetResult, type TargetStatus } from '../targets';
import { mb, ms, STATUS_COLOR, statusWord, times } from './format';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const PRODUCT = '#3b6fd4';
const FLOOR = '#a8b3bf';

interface Group {
  label: string;
  product: number;
  floor: number;
  engine: number;
  target: TargetResult | undefined;
}

const ENGINE = '#d9c58f';
const groupOf = (label: string, c: LaunchComparison, target: TargetResult | undefined): Group => ({
  label,
  product: c.product.p50,
  floor: c.floor.p50,
  engine: c.engine?.p50 ?? 0,
  target,
});

function niceMax(x: number): number {
  const pow = 10 ** Math.floor(Math.log10(Math.max(x, 1)));
  for (const step of [1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (step * pow >= x) return step * pow;
  return 10 * pow;
}

export function renderSvg(r: BenchResults): string {
  const target = (id: string) => r.targets.find((t) => t.id === id);
  const groups: Group[] = [];
  if (r.attach.ok) groups.push(groupOf('Attach', r.attach.value, target('attach_p50_vs_floors')));
  if (r.materialize.ok) {
    groups.push(
      groupOf('First launch, 1 repo', r.materialize.value.oneRepository, target('materialize_1_repo_p50_vs_floors')),
    );
    groups.push(
      groupOf(
        'First launch, 3 repos',
        r.materialize.value.threeRepositories,
        target('materialize_3_repos_p50_vs_floors'),
      ),
    );
  }
  if (r.resume?.ok) groups.push(groupOf('Resume', r.resume.value, target('resume_p50_vs_floors')));
  if (r.sshAttach?.ok) groups.push(groupOf('SSH attach', r.sshAttach.value, target('ssh_attach_p50_vs_floors')));
  if (r.containerAttach?.ok)
    groups.push(groupOf('Container attach', r.containerAttach.value, target('container_attach_p50_vs_floors')));

  const W = 1000;
  const chart = { x: 90, y: 110, w: 860, h: 250 };
  const yMax = niceMax(Math.max(1, ...groups.flatMap((g) => [g.product, g.floor + g.engine])) * 1.1);
  const y = (v: number) => chart.y + chart.h - (v / yMax) * chart.h;
  const parts: string[] = [];
  const text = (x: number, yy: number, s: string, attrs = '') =>
    parts.push(`<text x="${x}" y="${yy}" ${attrs}>${esc(s)}</text>`);

  text(24, 36, 'task-workspaces benchmark', 'font-size="20" font-weight="600"');
  text(
    24,
    58,
    `${r.meta.startedAt.slice(0, 16).replace('T', ' ')} UTC · ${r.meta.machine.cpus} cores · ${r.meta.durationSeconds} s run${r.meta.quick ? ' · QUICK RUN (reduced samples)' : ''}`,
    'font-size="12" fill="#57606a"',
  );
  text(
    24,
    76,
    'p50 of launches until 201: product (HTTP → Temporal) vs bare floor (the same statements, git/ssh/podman and spawn in one process) + engine floor (a no-work workflow of the same shape)',
    'font-size="12" fill="#57606a"',
  );

  for (let i = 0; i <= 5; i++) {
    const v = (yMax / 5) * i;
    parts.push(
      `<line x1="${chart.x}" x2="${chart.x + chart.w}" y1="${y(v)}" y2="${y(v)}" stroke="#d8dee4" stroke-width="1"/>`,
    );
    text(chart.x - 8, y(v) + 4, `${v.toFixed(0)} ms`, 'font-size="11" text-anchor="end" fill="#57606a"');
  }
  const slot = chart.w / Math.max(1, groups.length);
  const barW = Math.min(70, slot / 4);
  groups.forEach((g, i) => {
    const cx = chart.x + slot * i + slot / 2;
    const productTop = y(g.product);
    parts.push(
      `<rect x="${cx - barW - 4}" y="${productTop}" width="${barW}" height="${chart.y + chart.h - productTop}" fill="${PRODUCT}"/>`,
    );
    text(cx - barW / 2 - 4, productTop - 6, ms(g.product), 'font-size="12" text-anchor="middle"');
    const bareTop = y(g.floor);
    parts.push(
      `<rect x="${cx + 4}" y="${bareTop}" width="${barW}" height="${chart.y + chart.h - bareTop}" fill="${FLOOR}"/>`,
    );
    const engineTop = y(g.floor + g.engine);
    parts.push(
      `<rect x="${cx + 4}" y="${engineTop}" width="${barW}" height="${bareTop - engineTop}" fill="${ENGINE}"/>`,
    );
    text(cx + 4 + barW / 2, engineTop - 6, `${ms(g.floor)} + ${ms(g.engine)}`, 'font-size="11" text-anchor="middle"');
    text(cx, chart.y + chart.h + 20, g.label, 'font-size="13" text-anchor="middle" font-weight="600"');
    const status: TargetStatus = g.target?.status ?? 'error';
    text(
      cx,
      chart.y + chart.h + 40,
      `${times(g.product / (g.floor + g.engine))} · ${g.target ? describeTarget(g.target) : '—'} · ${statusWord(status)}`,
      `font-size="12" text-anchor="middle" fill="${STATUS_COLOR[status]}"`,
    );
  });
  parts.push(
    `<line x1="${chart.x}" x2="${chart.x + chart.w}" y1="${chart.y + chart.h}" y2="${chart.y + chart.h}" stroke="#57606a"/>`,
  );
  const legendY = chart.y - 8;
  parts.push(`<rect x="${chart.x + chart.w - 340}" y="${legendY - 10}" width="12" height="12" fill="${PRODUCT}"/>`);
  text(chart.x + chart.w - 322, legendY, 'product p50', 'font-size="12"');
  parts.push(`<rect x="${chart.x + chart.w - 230}" y="${legendY - 10}" width="12" height="12" fill="${FLOOR}"/>`);
  text(chart.x + chart.w - 212, legendY, 'bare floor p50', 'font-size="12"');
  parts.push(`<rect x="${chart.x + chart.w - 110}" y="${legendY - 10}" width="12" height="12" fill="${ENGINE}"/>`);
  text(chart.x + chart.w - 92, legendY, '+ engine floor', 'font-size="12"');

  const lines: { status: TargetStatus | null; s: string }[] = [];
  const line = (id: string | null, s: string) => lines.push({ status: id ? (target(id)?.status ?? 'error') : null, s });
  if (r.manyTasks.ok) {
    const m = r.manyTasks.value;
    line(
      'many_tasks_failures',
      `${m.tasks} first launches at once on one repository: ${m.failures} failures (target 0)`,
    );
    line(
      'many_tasks_wall_vs_floor',
      `  … wall ${m.wallSeconds.toFixed(2)} s vs floor ${m.floor?.wallSeconds.toFixed(2) ?? '—'} s = ${times(m.wallRatio)} (target ≤ 1.3×)`,
    );
  } else line('many_tasks_failures', `Many first launches on one repository: error`);
  if (r.cleanup.ok && r.cleanup.value.status === 'measured') {
    const c = r.cleanup.value;
    line(
      'archive_throughput_vs_floors',
      `Single archives of ${c.tasks} tasks: ${c.product.seconds.toFixed(1)} s vs bare ${c.floor.seconds.toFixed(1)} s + engine ${c.engine.seconds.toFixed(1)} s = ${times(c.throughputRatioToFloors)} throughput (target ≥ 0.8×)`,
    );
  } else line('archive_throughput_vs_floors', 'Single archives: error');
  if (r.boardDelete?.ok) {
    const b = r.boardDelete.value;
    line(
      'board_delete_throughput_vs_bare',
      `Board delete of ${b.tasks} tasks: ${b.product.seconds.toFixed(1)} s vs bare ${b.floor.seconds.toFixed(1)} s = ${times(b.throughputRatio)} throughput (target ≥ 0.5×), ${b.product.failures} failures`,
    );
  } else line('board_delete_throughput_vs_bare', 'Board delete: error or not run');
  if (r.idleRelease?.ok) {
    const v = r.idleRelease.value;
    line(
      'idle_release_throughput_vs_bare',
      `Idle release of ${v.tasks} tasks: ${v.release.product.seconds.toFixed(1)} s vs bare ${v.release.floor.seconds.toFixed(1)} s = ${times(v.release.throughputRatio)} throughput (target ≥ 0.6×), ${v.release.product.failures} failures`,
    );
    line(
      'idle_restore_throughput_vs_bare',
      `  … restore on the next launch: ${v.restore.product.seconds.toFixed(1)} s vs bare ${v.restore.floor.seconds.toFixed(1)} s = ${times(v.restore.throughputRatio)} throughput (target ≥ 0.6×)`,
    );
  } else line('idle_release_throughput_vs_bare', 'Idle release and restore: error or not run');
  if (r.diskMeasurement?.ok) {
    const d = r.diskMeasurement.value;
    line(
      'attach_with_disk_measurement_ratio',
      `Attach p50 with ${d.workspaces.toLocaleString('en')} workspaces, disk measurement on vs off: ${ms(d.on.p50)} vs ${ms(d.off.p50)} = ${times(d.ratioP50)} (target ≤ 1.05×)`,
    );
  } else line('attach_with_disk_measurement_ratio', 'Attach beside the disk measurement: error or not run');
  if (r.supervision?.ok) {
    const now = r.supervision.value.supervisor;
    line(
      'supervisor_pss_p50_mb',
      `Per-agent supervision (C supervisor, n=${r.supervision.value.agents}): PSS p50 ${now.pssP50Mb.toFixed(2)} MB (target ≤ 1 MB)`,
    );
    line(
      'supervisor_start_cpu_p50_ms',
      `  … CPU to start p50 ${now.cpuP50Ms.toFixed(2)} ms raw, ${now.cpuAboveFloorP50Ms.toFixed(2)} ms above the exec sleep floor (target ≤ 5 ms, raw)`,
    );
  } else line('supervisor_pss_p50_mb', 'Per-agent supervision: error or not run');
  if (r.agentsAlive?.ok) {
    const a = r.agentsAlive.value;
    line(
      'worker_rss_100_agents_ratio',
      `Worker RSS with ${a.alive} agents alive vs none: ${a.withAgents.worker.rssMb.toFixed(0)} vs ${a.none.worker.rssMb.toFixed(0)} MB = ${times(a.ratio.worker)} (target ≤ 1.1×)`,
    );
    line(
      'gateway_rss_100_agents_ratio',
      `Gateway RSS with ${a.alive} agents alive vs none: ${a.withAgents.gateway.rssMb.toFixed(0)} vs ${a.none.gateway.rssMb.toFixed(0)} MB = ${times(a.ratio.gateway)} (target ≤ 1.1×)`,
    );
  } else line('worker_rss_100_agents_ratio', '100 agents alive: error or not run');
  if (r.tracing?.ok) {
    const x = r.tracing.value;
    line(
      'attach_tracing_exporting_vs_not_loaded_ratio',
      `Attach p50, tracing exporting to a local sink vs not loaded: ${ms(x.on.p50)} vs ${ms(x.off.p50)} = ${times(x.ratioP50)} (target ≤ 1.02×); loaded, nothing sampled: ${times(x.loadedRatioP50)}`,
    );
  } else
    line(
      'attach_tracing_exporting_vs_not_loaded_ratio',
      'Attach with tracing exporting vs not loaded: error or not run',
    );
  if (r.growth.ok) {
    const g = r.growth.value;
    line(
      'growth_attach_p50_ratio',
      `Attach p50 with ${g.small.tasksInDatabase.toLocaleString('en')} → ${g.large.tasksInDatabase.toLocaleString('en')} tasks: ${ms(g.small.attach.p50)} → ${ms(g.large.attach.p50)} = ${times(g.ratioP50)} (target ≤ 1.1×); ${g.plans.some((p) => p.largeSeqScans.length) ? 'a statement scans a large table' : 'no scan of a large table'}`,
    );
  } else line('growth_attach_p50_ratio', 'Growth: error');
  if (r.exitDetection?.ok) {
    const e = r.exitDetection.value;
    line('exit_noticed_watched_p50_ms', `Agent exit recorded, its starter alive: ${ms(e.watched.p50)} (target ≤ 1 s)`);
    line(
      'exit_noticed_unwatched_p50_ms',
      `Agent exit recorded, its starter killed: ${ms(e.unwatched.p50)} (target ≤ 10 s)`,
    );
  }
  if (r.memory) {
    const peak = (w: typeof r.memory.worker) => Math.max(w.peakRssMb ?? 0, w.hwmReset ? (w.hwmMb ?? 0) : 0);
    line('worker_peak_rss_mb', `Worker peak RSS (${r.memory.window}): ${mb(peak(r.memory.worker))} (target ≤ 300 MB)`);
    line(
      'gateway_peak_rss_mb',
      `Gateway peak RSS (${r.memory.window}): ${mb(peak(r.memory.gateway))} (target ≤ 200 MB)`,
    );
  }
  const top = chart.y + chart.h + 80;
  lines.forEach((l, i) => {
    const yy = top + i * 24;
    const color = l.status ? STATUS_COLOR[l.status] : '#57606a';
    parts.push(`<circle cx="32" cy="${yy - 4}" r="5" fill="${color}"/>`);
    text(
      46,
      yy,
      `${l.status ? statusWord(l.status).toUpperCase().padEnd(5) : ''}  ${l.s}`,
      `font-size="13" fill="${l.status === 'miss' ? STATUS_COLOR.miss : '#24292f'}"`,
    );
  });
  const H = top + lines.length * 24 + 10;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="-apple-system, 'Segoe UI', Helvetica, Arial, sans-serif">`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
