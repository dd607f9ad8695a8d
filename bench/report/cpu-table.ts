/**
 * The "where the CPU goes" section of bench/results/latest.md: CPU per unit of work by process,
 * product beside floor, which latency alone does not show on a two-core machine.
 */
import { REAPED_SUFFIX } from '../cpu';
import type { BenchResults } from '../model';

export function cpuTable(r: BenchResults): string[] {
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
  if (r.containerAttach?.ok)
    rows.push(
      ['Container attach, product (per launch)', r.containerAttach.value.cpuPerLaunchMs.product],
      ['Container attach, floor (per launch)', r.containerAttach.value.cpuPerLaunchMs.floor],
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
  if (r.idleRelease?.ok) {
    const v = r.idleRelease.value;
    rows.push(
      ['Idle release, product (per task)', v.release.cpuPerTaskMs.product],
      ['Idle release, floor (per task)', v.release.cpuPerTaskMs.floor],
      ['Restore on the next launch, product (per task)', v.restore.cpuPerTaskMs.product],
      ['Restore, floor (per task)', v.restore.cpuPerTaskMs.floor],
    );
  }
  if (r.diskMeasurement?.ok)
    rows.push(
      ['Attach, disk measurement off (per launch)', r.diskMeasurement.value.cpuPerAttachMs.off],
      [
        'Attach, disk measurement on (per launch; the worker counts its `du`s)',
        r.diskMeasurement.value.cpuPerAttachMs.on,
      ],
    );
  if (r.tracing?.ok) {
    const c = r.tracing.value.cpuPerAttachMs;
    rows.push(
      ['Attach, tracing not loaded (per launch)', c.off],
      ['Attach, tracing loaded, nothing sampled (per launch)', c.loaded],
      ['Attach, tracing exporting to the local sink (per launch; the sink counts with bench)', c.on],
    );
  }
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
