/** The operator's hosts: live or not, disk, containers; and an idle release run now (or dry). */
import { useState } from 'preact/hooks';
import { allPages, type ApiFailure } from '../api';
import { MaybeError } from '../parts/error-view';
import { useSession } from '../session-context';
import { useResource } from '../use-resource';

interface Host {
  hostId: string;
  live: boolean;
  lastSeenAt: string;
  workspaceRoot: string;
  executors: string[];
  version: string;
  containers: { available: boolean; reason?: string } | null;
  disk: { freeBytes: number; totalBytes: number; workspaceBytes: number; measuredAt: string } | null;
  lowDisk: boolean;
}

interface Release {
  released: { taskId: string; operationId: string | null }[];
  kept: { taskId: string; reason: string }[];
  dryRun: boolean;
}

/** Why an idle release kept a task, in words (the API's `reason`). */
const KEPT_TEXT: Record<string, string> = {
  pinned: 'pinned: its user keeps it from release',
  running: 'an agent of it is running',
  shared_task_running: "another task's agent runs in its workspace",
};

const GIB = 1024 ** 3;
const gib = (bytes: number) => `${(bytes / GIB).toFixed(1)} GiB`;

export function Hosts() {
  const { api } = useSession();
  const hosts = useResource(
    () => allPages<Host>(api, '/v1/hosts'),
    [api],
    () => false,
  );
  const [release, setRelease] = useState<Release | null>(null);
  const [error, setError] = useState<ApiFailure | null>(null);
  // Empty: the service's own threshold (TWS_IDLE_RELEASE_AFTER); else idle for at least this many minutes.
  const [idleMinutes, setIdleMinutes] = useState('');

  async function idleRelease(hostId: string, dryRun: boolean) {
    setError(null);
    setRelease(null);
    const minutes = idleMinutes.trim() === '' ? null : Number(idleMinutes);
    try {
      setRelease(
        await api.send<Release>('POST', '/v1/idle-release', {
          hostId,
          dryRun,
          ...(minutes === null || !Number.isFinite(minutes) ? {} : { idleForMs: Math.round(minutes * 60_000) }),
        }),
      );
    } catch (err) {
      setError(err as ApiFailure);
    }
  }

  return (
    <section>
      <h1>Hosts</h1>
      <button type="button" data-testid="hosts-refresh" onClick={hosts.reload}>
        Refresh
      </button>
      <p>
        <label>
          Idle release: idle for at least{' '}
          <input
            data-testid="idle-for-minutes"
            type="number"
            min="0"
            step="any"
            placeholder="the service's setting"
            value={idleMinutes}
            onInput={(e) => setIdleMinutes(e.currentTarget.value)}
          />{' '}
          minutes
        </label>
      </p>
      <MaybeError error={hosts.error} />
      <MaybeError error={error} />
      <table class="rows">
        <thead>
          <tr>
            <th>Host</th>
            <th>Live</th>
            <th>Disk</th>
            <th>Executors</th>
            <th>Containers</th>
            <th>Idle release</th>
          </tr>
        </thead>
        <tbody>
          {hosts.value?.map((host) => (
            <tr key={host.hostId} data-testid="host" data-host-id={host.hostId}>
              <td>
                {host.hostId}
                <br />
                <small>
                  {host.workspaceRoot} · {host.version}
                </small>
              </td>
              <td data-testid="host-live">
                {host.live ? 'live' : `not seen since ${new Date(host.lastSeenAt).toLocaleString()}`}
              </td>
              <td class={host.lowDisk ? 'warn' : ''} data-testid="host-disk">
                {host.disk
                  ? `${gib(host.disk.freeBytes)} free of ${gib(host.disk.totalBytes)}; workspaces ${gib(host.disk.workspaceBytes)}`
                  : 'not measured yet'}
                {host.lowDisk ? ' (low)' : ''}
              </td>
              <td>{host.executors.join(', ')}</td>
              <td>{host.containers?.available ? 'available' : (host.containers?.reason ?? 'no')}</td>
              <td>
                <button
                  type="button"
                  data-testid="idle-release-dry"
                  onClick={() => void idleRelease(host.hostId, true)}
                >
                  What would go
                </button>{' '}
                <button type="button" data-testid="idle-release" onClick={() => void idleRelease(host.hostId, false)}>
                  Release now
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {release ? (
        <div class="panel" data-testid="idle-release-result">
          <h2>{release.dryRun ? 'Idle release would release' : 'Idle release released'}</h2>
          <ul>
            {release.released.map((r) => (
              <li key={r.taskId} data-testid="idle-released">
                <a href={`#/tasks/${r.taskId}`}>{r.taskId}</a>
                {release.dryRun ? '' : ': its work saved, its worktrees being removed (a cleanup job)'}
              </li>
            ))}
            {release.released.length === 0 ? <li>nothing: no workspace of this host is idle for that long</li> : null}
          </ul>
          <h3>Kept</h3>
          <ul>
            {release.kept.map((k) => (
              <li key={k.taskId} data-testid="idle-kept">
                <a href={`#/tasks/${k.taskId}`}>{k.taskId}</a>: {KEPT_TEXT[k.reason] ?? k.reason}
              </li>
            ))}
            {release.kept.length === 0 ? <li>none</li> : null}
          </ul>
        </div>
      ) : null}
    </section>
  );
}
