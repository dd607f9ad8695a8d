/** `tws disk`, and how `tws limits` and `tws disk` print what the API answers, for a person. */
import { all, CliError, EXIT, json, table, type Parsed, type Target } from './cli-io';

/** Bytes as a person reads them: 1.5 GiB. */
function humanBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  for (; value >= 1024 && unit < units.length - 1; unit++) value /= 1024;
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

type LimitsView = { memoryBytes: number; pids: number; cpus: number } | null;

/** A task's limits and use, as `tws limits` prints them. */
export function limitsReport(t: {
  limits: { agent: LimitsView; task: LimitsView; diskQuotaBytes: number | null; overDiskQuota: boolean };
  usage: { memoryBytes: number; pids: number; measuredAt: string } | null;
  disk: { bytes: number } | null;
}): string {
  const each = (l: NonNullable<LimitsView>) =>
    `memory ${humanBytes(l.memoryBytes)}, ${l.pids} processes, ${l.cpus} CPUs`;
  const lines = [
    t.limits.agent
      ? `each agent (by default): ${each(t.limits.agent)}`
      : 'agents run without limits (TWS_AGENT_LIMITS=off)',
  ];
  if (t.limits.task) lines.push(`its agents together, at most: ${each(t.limits.task)}`);
  const workspace = t.disk ? `, workspace ${humanBytes(t.disk.bytes)}` : '';
  lines.push(
    t.limits.diskQuotaBytes === null
      ? `disk quota: none${workspace}`
      : `disk quota: ${humanBytes(t.limits.diskQuotaBytes)}${workspace}${t.limits.overDiskQuota ? ' (OVER: its launches are refused)' : ''}`,
  );
  const max = t.limits.task;
  lines.push(
    t.usage
      ? `in use now: memory ${humanBytes(t.usage.memoryBytes)}${max ? ` (${Math.round((100 * t.usage.memoryBytes) / max.memoryBytes)} %)` : ''}, ${t.usage.pids} processes (read ${t.usage.measuredAt})`
      : 'in use now: no agent runs',
  );
  return lines.join('\n');
}

/** One host's disk and its largest workspaces, as `tws disk` prints them. */
function diskReport(d: {
  hostId: string;
  lowDisk: boolean;
  disk: { freeBytes: number; totalBytes: number; workspaceBytes: number; measuredAt: string } | null;
  largest: { taskId: string; bytes: number; measuredAt: string }[];
}): string {
  if (!d.disk) return `${d.hostId}: not measured yet`;
  const head =
    `${d.hostId}: ${humanBytes(d.disk.freeBytes)} free of ${humanBytes(d.disk.totalBytes)}, ` +
    `workspaces ${humanBytes(d.disk.workspaceBytes)} (measured ${d.disk.measuredAt})` +
    (d.lowDisk ? ' LOW DISK: new workspaces are refused' : '');
  const rows = d.largest.map((w) => ({ taskId: w.taskId, size: humanBytes(w.bytes), measuredAt: w.measuredAt }));
  return `${head}\n${table(rows, ['taskId', 'size', 'measuredAt'])}`;
}

/** `tws disk [--host H] [--limit N]`: each host's disk, as last measured (every host's, one after another). */
export async function diskCommand(t: Target, p: Parsed, asJson: boolean, out: (s: string) => void): Promise<number> {
  const host = p.flags.get('--host');
  const limit = p.flags.get('--limit') ?? '20';
  if (typeof limit !== 'string' || !/^[1-9]\d{0,2}$/.test(limit) || Number(limit) > 200)
    throw new CliError('--limit takes a number from 1 to 200', EXIT.usage);
  const hostIds =
    typeof host === 'string' ? [host] : (await all(t, '/v1/hosts', {})).map((h: { hostId: string }) => h.hostId);
  const disks: Parameters<typeof diskReport>[0][] = [];
  for (const id of hostIds) disks.push(await json(t, 'GET', `/v1/hosts/${encodeURIComponent(id)}/disk?limit=${limit}`));
  out(`${asJson ? JSON.stringify(disks, null, 2) : disks.map(diskReport).join('\n\n')}\n`);
  return EXIT.ok;
}
