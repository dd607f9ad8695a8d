/** The operator's cleanup jobs: state, attempts, last error, retry / cancel, and the run in the Temporal UI. */
import { useState } from 'preact/hooks';
import { allPages, type ApiFailure } from '../api';
import { MaybeError } from '../parts/error-view';
import { taskHref } from '../route';
import { useSession } from '../session-context';
import { useResource } from '../use-resource';

interface Job {
  operationId: string;
  taskId: string;
  trigger: string;
  state: string;
  attempts: number;
  nextAttemptAt: string | null;
  lastError: string | null;
  createdAt: string;
  links: { temporal?: string };
}

const ENDED = new Set(['succeeded', 'cancelled']);

export function CleanupJobs() {
  const { api } = useSession();
  const [stateFilter, setStateFilter] = useState('');
  const [actionError, setActionError] = useState<ApiFailure | null>(null);
  const jobs = useResource(
    () => allPages<Job>(api, `/v1/cleanup-jobs${stateFilter ? `?state=${stateFilter}` : ''}`, 1000),
    [api, stateFilter],
    (change) => change.kind === 'cleanup_job',
  );

  async function act(job: Job, what: 'retry' | 'cancel') {
    setActionError(null);
    try {
      await api.send('POST', `/v1/cleanup-jobs/${job.operationId}/${what}`);
      jobs.reload();
    } catch (err) {
      setActionError(err as ApiFailure);
    }
  }

  return (
    <section>
      <h1>Cleanup jobs</h1>
      <label>
        State{' '}
        <select value={stateFilter} onChange={(e) => setStateFilter(e.currentTarget.value)}>
          <option value="">All</option>
          {['prepared', 'pending', 'running', 'retry_wait', 'needs_operator', 'succeeded', 'cancelled'].map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <MaybeError error={actionError} />
      <MaybeError error={jobs.error} />
      {jobs.value && jobs.value.length === 0 ? <p class="quiet">No cleanup job.</p> : null}
      <table class="rows">
        <thead>
          <tr>
            <th>Task</th>
            <th>Trigger</th>
            <th>State</th>
            <th>Attempts</th>
            <th>Last error</th>
            <th>Run</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {jobs.value?.map((job) => (
            <tr key={job.operationId} data-testid="cleanup-job" data-job-id={job.operationId}>
              <td>
                <a href={taskHref(job.taskId)}>{job.taskId.slice(0, 8)}</a>
              </td>
              <td>{job.trigger}</td>
              <td data-testid="job-state">{job.state}</td>
              <td>
                {job.attempts}
                {job.nextAttemptAt ? ` (next ${new Date(job.nextAttemptAt).toLocaleTimeString()})` : ''}
              </td>
              <td class="wrap">{job.lastError ?? ''}</td>
              <td>
                {job.links.temporal ? (
                  <a href={job.links.temporal} target="_blank" rel="noopener noreferrer" data-testid="temporal-link">
                    Temporal UI
                  </a>
                ) : null}
              </td>
              <td>
                {ENDED.has(job.state) ? null : (
                  <>
                    <button type="button" data-testid="job-retry" onClick={() => void act(job, 'retry')}>
                      Retry
                    </button>{' '}
                    <button type="button" data-testid="job-cancel" onClick={() => void act(job, 'cancel')}>
                      Cancel
                    </button>
                  </>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
