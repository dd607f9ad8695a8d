/** The work cleanups saved for this task (GET /v1/repositories/:id/saved-work), and whether a launch restored it. */
import { allPages } from '../api';
import { useSession } from '../session-context';
import type { TaskView } from '../task-types';
import { useResource } from '../use-resource';
import { MaybeError } from './error-view';

interface Saved {
  taskId: string;
  repositoryId: string;
  ref: string;
  commit: string;
  savedAt: string;
  trigger: string | null;
  restoredAt: string | null;
  restore: 'applied' | 'conflict' | 'abandoned' | null;
}

export function SavedWork({ task }: { task: TaskView }) {
  const { api } = useSession();
  const saved = useResource(
    async () =>
      (
        await Promise.all(
          task.repositories.map((r) => allPages<Saved>(api, `/v1/repositories/${r.repositoryId}/saved-work`, 1000)),
        )
      )
        .flat()
        .filter((s) => s.taskId === task.id),
    [api, task.id, task.repositories.length],
    (change) => change.taskId === task.id && change.kind === 'cleanup_job',
  );
  if (!saved.error && (saved.value?.length ?? 0) === 0) return null;
  return (
    <div class="panel">
      <h2>Saved work</h2>
      <MaybeError error={saved.error} />
      <ul>
        {saved.value?.map((s) => (
          <li key={s.ref}>
            <code>{s.ref}</code> saved {new Date(s.savedAt).toLocaleString()}
            {s.trigger ? ` by ${s.trigger}` : ''}
            {s.restoredAt ? `; restored ${new Date(s.restoredAt).toLocaleString()}` : '; not restored yet'}
            {s.restore === 'conflict' || s.restore === 'abandoned' ? ` (${s.restore}: apply the ref by hand)` : ''}
          </li>
        ))}
      </ul>
    </div>
  );
}
