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

  async function idleRelease(hostId: string, dryRun: boolean) {
    setError(null);
    try {
      setRelease(await api.send<Release>('POST', '/v1/idle-release', { hostId, dryRun }));
    } catch (err) {
      setError(err as ApiFailure);
    }
  }

  return (
    <section>
      <h1>Hosts</h1>
      <button type="button" onClick={hosts.reload}>
        Refresh
      </button>
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
              <td>{host.live ? 'live' : `not seen since ${new Date(host.lastSeenAt).toLocaleString()}`}</td>
              <td class={host.lowDisk ? 'warn' : ''}>
                {host.disk
                  ? `${gib(host.disk.freeBytes)} free of ${gib(host.disk.totalBytes)}; workspaces ${gib(host.disk.workspaceBytes)}`
                  : 'not measured yet'}
                {host.lowDisk ? ' (low)' : ''}
              </td>
              <td>{host.executors.join(', ')}</td>
              <td>{host.containers?.available ? 'available' : (host.containers?.reason ?? 'no')}</td>
              <td>
                <button type="button" onClick={() => void idleRelease(host.hostId, true)}>
                  What would go
                </button>{' '}
                <button type="button" onClick={() => void idleRelease(host.hostId, false)}>
                  Release now
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {release ? (
        <div class="panel">
          <h2>{release.dryRun ? 'Idle release would release' : 'Idle release released'}</h2>
          <ul>
            {release.released.map((r) => (
              <li key={r.taskId}>
                <a href={`#/tasks/${r.taskId}`}>{r.taskId}</a>
              </li>
            ))}
            {release.released.length === 0 ? <li>nothing</li> : null}
          </ul>
          <h3>Kept</h3>
          <ul>
            {release.kept.map((k) => (
              <li key={k.taskId}>
                {k.taskId}: {k.reason}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </section>
  );
}
