/**
 * bench/results/latest.svg, hand-written: product vs floor p50 bars for attach and the two
 * materializing launches, each with its ratio and target, then one line per other figure.
 */
import type { BenchResults } from '../model';
import { describeTarget, type TargetResult, type TargetStatus } from '../targets';
import { mb, ms, STATUS_COLOR, statusWord, times } from './format';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const PRODUCT = '#3b6fd4';
const FLOOR = '#a8b3bf';

interface Group {
  label: string;
  product: number;
  floor: number;
  target: TargetResult | undefined;
}

function niceMax(x: number): number {
  const pow = 10 ** Math.floor(Math.log10(Math.max(x, 1)));
  for (const step of [1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (step * pow >= x) return step * pow;
  return 10 * pow;
}

export function renderSvg(r: BenchResults): string {
  const target = (id: string) => r.targets.find((t) => t.id === id);
  const groups: Group[] = [];
  if (r.attach.ok) groups.push({ label: 'Attach launch', product: r.attach.value.product.p50, floor: r.attach.value.floor.p50, target: target('attach_p50_ratio') });
  if (r.materialize.ok) {
    groups.push({ label: 'Materialize, 1 repository', product: r.materialize.value.oneRepository.product.p50, floor: r.materialize.value.oneRepository.floor.p50, target: target('materialize_1_repo_p50_ratio') });
    groups.push({ label: 'Materialize, 3 repositories', product: r.materialize.value.threeRepositories.product.p50, floor: r.materialize.value.threeRepositories.floor.p50, target: target('materialize_3_repos_p50_ratio') });
  }

  const W = 860;
  const chart = { x: 90, y: 110, w: 720, h: 250 };
  const yMax = niceMax(Math.max(1, ...groups.flatMap((g) => [g.product, g.floor])) * 1.1);
  const y = (v: number) => chart.y + chart.h - (v / yMax) * chart.h;
  const parts: string[] = [];
  const text = (x: number, yy: number, s: string, attrs = '') => parts.push(`<text x="${x}" y="${yy}" ${attrs}>${esc(s)}</text>`);

  text(24, 36, 'task-workspaces benchmark', 'font-size="20" font-weight="600"');
  text(24, 58, `${r.meta.startedAt.slice(0, 16).replace('T', ' ')} UTC · ${r.meta.machine.cpus} cores · ${r.meta.durationSeconds} s run${r.meta.quick ? ' · QUICK RUN (reduced samples)' : ''}`, 'font-size="12" fill="#57606a"');
  text(24, 76, 'p50 of launches until 201: product (HTTP → Temporal → worker) vs floor (the same statements, git and spawn in one process)', 'font-size="12" fill="#57606a"');

  for (let i = 0; i <= 5; i++) {
    const v = (yMax / 5) * i;
    parts.push(`<line x1="${chart.x}" x2="${chart.x + chart.w}" y1="${y(v)}" y2="${y(v)}" stroke="#d8dee4" stroke-width="1"/>`);
    text(chart.x - 8, y(v) + 4, `${v.toFixed(0)} ms`, 'font-size="11" text-anchor="end" fill="#57606a"');
  }
  const slot = chart.w / Math.max(1, groups.length);
  const barW = Math.min(70, slot / 4);
  groups.forEach((g, i) => {
    const cx = chart.x + slot * i + slot / 2;
    for (const [value, color, dx] of [[g.product, PRODUCT, -barW - 4], [g.floor, FLOOR, 4]] as const) {
      const top = y(value);
      parts.push(`<rect x="${cx + dx}" y="${top}" width="${barW}" height="${chart.y + chart.h - top}" fill="${color}"/>`);
      text(cx + dx + barW / 2, top - 6, ms(value), 'font-size="12" text-anchor="middle"');
    }
    text(cx, chart.y + chart.h + 20, g.label, 'font-size="13" text-anchor="middle" font-weight="600"');
    const status: TargetStatus = g.target?.status ?? 'error';
    text(cx, chart.y + chart.h + 40, `ratio ${times(g.product / g.floor)} · target ${g.target ? describeTarget(g.target) : '—'} · ${statusWord(status)}`, `font-size="12" text-anchor="middle" fill="${STATUS_COLOR[status]}"`);
  });
  parts.push(`<line x1="${chart.x}" x2="${chart.x + chart.w}" y1="${chart.y + chart.h}" y2="${chart.y + chart.h}" stroke="#57606a"/>`);
  const legendY = chart.y - 8;
  parts.push(`<rect x="${chart.x + chart.w - 230}" y="${legendY - 10}" width="12" height="12" fill="${PRODUCT}"/>`);
  text(chart.x + chart.w - 212, legendY, 'product p50', 'font-size="12"');
  parts.push(`<rect x="${chart.x + chart.w - 120}" y="${legendY - 10}" width="12" height="12" fill="${FLOOR}"/>`);
  text(chart.x + chart.w - 102, legendY, 'floor p50', 'font-size="12"');

  const lines: { status: TargetStatus | null; s: string }[] = [];
  const line = (id: string | null, s: string) => lines.push({ status: id ? (target(id)?.status ?? 'error') : null, s });
  if (r.manyTasks.ok) {
    const m = r.manyTasks.value;
    line('many_tasks_failures', `${m.tasks} tasks on one repository at once: ${m.wallSeconds.toFixed(2)} s wall, ${m.launchesPerSecond.toFixed(1)} launches/s, ${m.failures} failures (target 0)`);
  } else line('many_tasks_failures', `Many tasks on one repository: error`);
  if (r.cleanup.ok && r.cleanup.value.status === 'measured') {
    const c = r.cleanup.value;
    line('cleanup_throughput_ratio', `Cleanup of ${c.tasks} tasks: ${c.product.worktreesPerSecond.toFixed(1)} vs floor ${c.floor.worktreesPerSecond.toFixed(1)} worktrees/s = ${times(c.throughputRatio)} (target ≥ 0.5×), ${c.product.failures} failures`);
  } else if (r.cleanup.ok && r.cleanup.value.status === 'not_available') line('cleanup_throughput_ratio', `Cleanup: not available yet (archive route answers ${r.cleanup.value.probe.httpStatus}); target ≥ 0.5× floor`);
  else line('cleanup_throughput_ratio', 'Cleanup: error');
  if (r.growth.ok) {
    const g = r.growth.value;
    line('growth_attach_p50_ratio', `Attach p50 with ${g.small.tasksInDatabase.toLocaleString('en')} → ${g.large.tasksInDatabase.toLocaleString('en')} tasks: ${ms(g.small.attach.p50)} → ${ms(g.large.attach.p50)} = ${times(g.ratioP50)} (target ≤ 1.1×); ${g.plans.some((p) => p.largeSeqScans.length) ? 'a statement scans a large table' : 'no scan of a large table'}`);
  } else line('growth_attach_p50_ratio', 'Growth: error');
  if (r.memory) {
    const w = r.memory.worker;
    line('worker_peak_rss_mb', `Worker peak RSS (${r.memory.window}): ${mb(Math.max(w.peakRssMb ?? 0, w.hwmReset ? (w.hwmMb ?? 0) : 0))} (target ≤ 300 MB)`);
    line(null, `Gateway peak RSS (${r.memory.window}): ${mb(Math.max(r.memory.gateway.peakRssMb ?? 0, r.memory.gateway.hwmReset ? (r.memory.gateway.hwmMb ?? 0) : 0))}`);
  }
  const top = chart.y + chart.h + 80;
  lines.forEach((l, i) => {
    const yy = top + i * 24;
    const color = l.status ? STATUS_COLOR[l.status] : '#57606a';
    parts.push(`<circle cx="32" cy="${yy - 4}" r="5" fill="${color}"/>`);
    text(46, yy, `${l.status ? statusWord(l.status).toUpperCase().padEnd(5) : ''}  ${l.s}`, `font-size="13" fill="${l.status === 'miss' ? STATUS_COLOR.miss : '#24292f'}"`);
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
