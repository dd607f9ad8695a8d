/**
 * A task's page: what it is and where it runs (environment, executor, disk), its sessions with
 * live logs, its git status and diff, the merge, and archive / delete. Each part reads its own
 * resource and is read again when the feed tells of a change to this task.
 */
import { useState } from 'preact/hooks';
import { MaybeError } from '../parts/error-view';
import { GitStatus } from '../parts/git-status';
import { SavedWork } from '../parts/saved-work';
import { TaskDiff } from '../parts/task-diff';
import { TaskLifecycle } from '../parts/task-lifecycle';
import { TaskMerge } from '../parts/task-merge';
import { TaskSessions } from '../parts/task-sessions';
import { useSession } from '../session-context';
import { bytesText, type TaskView } from '../task-types';
import { useResource } from '../use-resource';

export function TaskPage({ taskId }: { taskId: string }) {
  const { api } = useSession();
  const task = useResource(
    () => api.get<TaskView>(`/v1/tasks/${taskId}`),
    [api, taskId],
    (change) => change.id === taskId || change.taskId === taskId,
  );
  // An action of the page (a rebase, a merge, an archive) counts: what shows the worktree is read again.
  const [acted, setActed] = useState(0);
  const changed = () => {
    task.reload();
    setActed((n) => n + 1);
  };
  // A task that is not there (deleted, here or elsewhere, or never made) shows no stale view of it.
  if (task.error?.status === 404)
    return (
      <section>
        <p>
          <a href="#/">← Board</a>
        </p>
        <p data-testid="task-gone">This task is not there: it was deleted, or the link is wrong.</p>
        <MaybeError error={task.error} />
      </section>
    );
  const view = task.value;
  if (!view)
    return (
      <section>
        <p>
          <a href="#/">← Board</a>
        </p>
        <MaybeError error={task.error} />
        {task.loading ? <p class="quiet">Reading the task…</p> : null}
      </section>
    );
  const state = view.state === 'archived' ? 'archived' : view.merged ? 'merged' : 'active';
  const env = view.environment;
  return (
    <section class="task">
      <p>
        <a href="#/">← Board</a>
      </p>
      <h1 data-testid="task-title">{view.title}</h1>
      <MaybeError error={task.error} />
      <div class="panel">
        <dl class="facts">
          <dt>State</dt>
          <dd data-testid="task-state">{state}</dd>
          <dt>Environment</dt>
          <dd data-testid="environment">
            {env
              ? `${env.status} on ${env.hostId}${env.borrowed ? ` (borrowed from task ${env.ownerTaskId})` : ''}`
              : 'none yet: the first launch makes it'}
          </dd>
          <dt>Executor</dt>
          <dd>{env?.executorType ?? '—'}</dd>
          <dt>Disk</dt>
          <dd>
            {view.disk ? bytesText(view.disk.bytes) : 'not measured'}
            {view.limits.diskQuotaBytes ? ` of ${bytesText(view.limits.diskQuotaBytes)}` : ''}
            {view.limits.overDiskQuota ? ' (over its quota)' : ''}
          </dd>
          <dt>Repositories</dt>
          <dd>
            {view.repositories.map((r) => (
              <div key={r.repositoryId}>
                <code>{r.checkoutBranch ?? r.baseBranch}</code>
                {r.checkoutBranch ? ' (worked on as it is)' : ` (base)`}
              </div>
            ))}
          </dd>
          <dt>Merged</dt>
          <dd>{view.merged ? new Date(view.merged.at).toLocaleString() : 'no'}</dd>
          <dt>Pinned</dt>
          <dd>{view.pinned ? 'yes: never released for idleness' : 'no'}</dd>
        </dl>
        <TaskLifecycle task={view} onChanged={changed} />
      </div>
      <TaskSessions taskId={taskId} archived={view.state === 'archived'} />
      <GitStatus taskId={taskId} hasEnvironment={env !== null} acted={acted} />
      <TaskDiff taskId={taskId} />
      <TaskMerge taskId={taskId} onChanged={changed} />
      <SavedWork task={view} />
    </section>
  );
}
