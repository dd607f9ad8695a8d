/** A new task: its title and repositories (POST /v1/tasks); then its page. */
import { useState } from 'preact/hooks';
import type { ApiFailure } from '../api';
import { taskHref } from '../route';
import { useSession } from '../session-context';
import { MaybeError } from './error-view';

export function NewTaskForm({
  repositories,
  boardId,
}: {
  repositories: { id: string; name: string }[];
  boardId: string | null;
}) {
  const { api } = useSession();
  const [title, setTitle] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [busy, setBusy] = useState(false);

  async function create(event: Event) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const task = await api.send<{ id: string }>('POST', '/v1/tasks', {
        title,
        ...(boardId ? { boardId } : {}),
        repositories: chosen.map((repositoryId) => ({ repositoryId })),
      });
      window.location.hash = taskHref(task.id);
    } catch (err) {
      setError(err as ApiFailure);
    } finally {
      setBusy(false);
    }
  }

  const toggle = (id: string, on: boolean) => setChosen((now) => (on ? [...now, id] : now.filter((c) => c !== id)));
  return (
    <form class="new-task" onSubmit={(event) => void create(event)}>
      <label>
        Title <input data-testid="task-title" value={title} onInput={(e) => setTitle(e.currentTarget.value)} required />
      </label>
      <fieldset>
        <legend>Repositories</legend>
        {repositories.length === 0 ? <p class="quiet">No repository yet: an operator adds them.</p> : null}
        {repositories.map((repo) => (
          <label key={repo.id}>
            <input
              type="checkbox"
              data-testid="task-repo"
              value={repo.id}
              checked={chosen.includes(repo.id)}
              onChange={(e) => toggle(repo.id, e.currentTarget.checked)}
            />{' '}
            {repo.name}
          </label>
        ))}
      </fieldset>
      <button type="submit" data-testid="create-task" disabled={busy || title.trim() === ''}>
        Create
      </button>
      <MaybeError error={error} />
    </form>
  );
}
