/**
 * Archive, unarchive and delete. An archive keeps uncommitted work in its worktree (no consent
 * asked: nothing is lost); a delete of a task with uncommitted work is refused until the person
 * consents to discard it (`discardChanges=true`: the work is saved on a hidden ref first); the
 * consent box says so. Delete is an operator's (the API decides; the button shows for the
 * operator token only).
 */
import { useState } from 'preact/hooks';
import type { ApiFailure } from '../api';
import { useSession } from '../session-context';
import type { TaskView } from '../task-types';
import { MaybeError } from './error-view';

export function TaskLifecycle({ task, onChanged }: { task: TaskView; onChanged: () => void }) {
  const { api, role } = useSession();
  const [consent, setConsent] = useState(false);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [done, setDone] = useState<string | null>(null);

  async function act(what: string, run: () => Promise<unknown>) {
    setError(null);
    setDone(null);
    try {
      await run();
      setDone(what);
      onChanged();
    } catch (err) {
      setError(err as ApiFailure);
    }
  }

  return (
    <div class="actions">
      {task.state === 'archived' ? (
        <button
          type="button"
          data-testid="unarchive"
          onClick={() => void act('Unarchived.', () => api.send('POST', `/v1/tasks/${task.id}/unarchive`))}
        >
          Unarchive
        </button>
      ) : (
        <button
          type="button"
          data-testid="archive"
          onClick={() =>
            void act(
              'Archived: its workspace is being cleaned up; its branch stays, and uncommitted work stays in its worktree.',
              () => api.send('POST', `/v1/tasks/${task.id}/archive`, {}),
            )
          }
        >
          Archive
        </button>
      )}
      {role === 'operator' ? (
        <>
          <label>
            <input
              type="checkbox"
              data-testid="consent-discard"
              checked={consent}
              onChange={(e) => setConsent(e.currentTarget.checked)}
            />{' '}
            Discard its uncommitted work
          </label>
          <button
            type="button"
            data-testid="delete"
            onClick={() =>
              void act('Deleting: its workspace and branches are being removed.', () =>
                api.send('DELETE', `/v1/tasks/${task.id}${consent ? '?discardChanges=true' : ''}`),
              )
            }
          >
            Delete
          </button>
        </>
      ) : null}
      {done ? (
        <span class="quiet" data-testid="lifecycle-done">
          {done}
        </span>
      ) : null}
      <MaybeError error={error} />
    </div>
  );
}
