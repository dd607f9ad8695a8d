/**
 * A task's sessions (GET /v1/tasks/:id/sessions) and a launch of one shell line: each session with
 * its state, its run's end, the restore of saved work its launch did, stop / resume, its run in the
 * Temporal UI, and its live log.
 */
import { useState } from 'preact/hooks';
import { allPages, type ApiFailure } from '../api';
import { useSession } from '../session-context';
import type { SessionView } from '../task-types';
import { useResource } from '../use-resource';
import { Choice } from './choice';
import { MaybeError } from './error-view';
import { SessionLog } from './session-log';

const EXECUTORS = ['worktree', 'local', 'ssh', 'container'];
const WORKING = new Set(['starting', 'running']);

export function TaskSessions({ taskId, archived }: { taskId: string; archived: boolean }) {
  const { api } = useSession();
  const [command, setCommand] = useState('');
  const [executor, setExecutor] = useState('worktree');
  const [error, setError] = useState<ApiFailure | null>(null);
  const [busy, setBusy] = useState(false);
  const sessions = useResource(
    () => allPages<SessionView>(api, `/v1/tasks/${taskId}/sessions`, 200),
    [api, taskId],
    (change) => change.taskId === taskId && change.kind !== 'merge',
  );

  async function act(run: () => Promise<unknown>) {
    setError(null);
    setBusy(true);
    try {
      await run();
      sessions.reload();
    } catch (err) {
      setError(err as ApiFailure);
    } finally {
      setBusy(false);
    }
  }

  const launch = (event: Event) => {
    event.preventDefault();
    void act(() =>
      api.send('POST', `/v1/tasks/${taskId}/sessions`, {
        executorType: executor,
        agentProfile: 'shell',
        command: ['sh', '-c', command],
      }),
    );
  };

  return (
    <div class="panel">
      <h2>Sessions</h2>
      <form class="actions" onSubmit={launch}>
        <Choice label="Executor" value={executor} options={EXECUTORS} onChange={setExecutor} />
        <input
          data-testid="launch-command"
          placeholder="a shell command line, e.g. make test"
          value={command}
          size={50}
          onInput={(e) => setCommand(e.currentTarget.value)}
        />
        <button type="submit" data-testid="launch" disabled={busy || archived || command.trim() === ''}>
          Launch
        </button>
        {archived ? <span class="quiet">Unarchive the task to launch.</span> : null}
      </form>
      <MaybeError error={error} />
      <MaybeError error={sessions.error} />
      {sessions.value?.length === 0 ? <p class="quiet">No session yet.</p> : null}
      {sessions.value?.map((session) => (
        <div key={session.id} class="session" data-testid="session" data-session-id={session.id}>
          <div class="actions">
            <b>{session.name ?? session.agentProfile}</b>
            <span>
              {session.executorType} · <span data-testid="session-state">{session.state}</span>
            </span>
            {session.execution?.endedAt ? (
              <span class="quiet">
                ended {session.execution.exitCode !== null ? `with exit code ${session.execution.exitCode}` : ''}
                {session.execution.signal ? ` by ${session.execution.signal}` : ''}
                {session.execution.outcome ? ` (${session.execution.outcome})` : ''}
              </span>
            ) : null}
            <button
              type="button"
              data-testid="session-stop"
              disabled={busy || !WORKING.has(session.state)}
              onClick={() => void act(() => api.send('POST', `/v1/sessions/${session.id}/stop`))}
            >
              Stop
            </button>
            <button
              type="button"
              data-testid="session-resume"
              disabled={busy || WORKING.has(session.state) || archived}
              onClick={() => void act(() => api.send('POST', `/v1/sessions/${session.id}/resume`, {}))}
            >
              Resume
            </button>
            {session.links.temporal ? (
              <a href={session.links.temporal} target="_blank" rel="noopener noreferrer" data-testid="temporal-link">
                Run in the Temporal UI
              </a>
            ) : null}
          </div>
          {session.error ? <p class="warn">{session.error.message}</p> : null}
          {session.restore === 'applied' ? (
            <p class="quiet">Its launch restored the work an idle release saved.</p>
          ) : null}
          {session.restore === 'conflict' ? (
            <p class="warn">
              The saved work did not apply to the branch as it is now: apply these refs by hand:{' '}
              {(session.restoreConflictRefs ?? []).map((ref) => (
                <code key={ref}>{ref} </code>
              ))}
            </p>
          ) : null}
          {/* A starting session has no execution yet, so no log: it opens once the agent runs (followed) or has ended (whole). */}
          {session.state === 'starting' ? null : (
            <SessionLog sessionId={session.id} live={session.state === 'running'} />
          )}
        </div>
      ))}
    </div>
  );
}
