/**
 * The merge: the preview for the chosen strategy (GET /v1/tasks/:id/merge-preview), merge with a
 * message (POST /v1/tasks/:id/merge, `Prefer: wait` and an Idempotency-Key per click), rebase,
 * and undo of the latest merge; the task's merges each with its run in the Temporal UI.
 */
import { useState } from 'preact/hooks';
import { allPages, type ApiFailure } from '../api';
import { BLOCKED_TEXT, idempotencyKey, overallOutcome, type Outcome } from '../merge-outcome';
import { useSession } from '../session-context';
import { useResource } from '../use-resource';
import { Choice } from './choice';
import { MaybeError } from './error-view';

const STRATEGIES = ['squash', 'merge', 'fast_forward', 'rebase'];

interface Preview {
  repositories: { repositoryId: string; outcome: Outcome; conflicts?: string[]; blockedBy?: string }[];
}
interface Merge {
  operationId: string;
  strategy: string;
  state: string;
  error?: { message: string };
  links: { temporal?: string };
}

export function TaskMerge({ taskId, onChanged }: { taskId: string; onChanged: () => void }) {
  const { api } = useSession();
  const [strategy, setStrategy] = useState('squash');
  const [message, setMessage] = useState('');
  const [error, setError] = useState<ApiFailure | null>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<Merge | null>(null);
  const preview = useResource(
    () => api.get<Preview>(`/v1/tasks/${taskId}/merge-preview?strategy=${strategy}`),
    [api, taskId, strategy],
    (change) => change.taskId === taskId,
  );
  const merges = useResource(
    () => allPages<Merge>(api, `/v1/tasks/${taskId}/merges`, 50),
    [api, taskId],
    (change) => change.kind === 'merge' && change.taskId === taskId,
  );
  const outcome = preview.value ? overallOutcome(preview.value.repositories.map((r) => r.outcome)) : null;
  const latest = merges.value?.[0];

  async function act(run: () => Promise<Merge | undefined>) {
    setError(null);
    setBusy(true);
    try {
      const merge = await run();
      if (merge) setResult(merge);
    } catch (err) {
      setError(err as ApiFailure);
    } finally {
      setBusy(false);
      preview.reload();
      merges.reload();
      onChanged();
    }
  }
  const merge = () =>
    act(() =>
      api.send<Merge>(
        'POST',
        `/v1/tasks/${taskId}/merge`,
        { strategy, ...(message.trim() ? { message } : {}) },
        { prefer: 'wait', 'idempotency-key': idempotencyKey((b) => crypto.getRandomValues(b)) },
      ),
    );

  return (
    <div class="panel">
      <h2>Merge</h2>
      <MaybeError error={preview.error} />
      {preview.value && outcome ? (
        <div data-testid="merge-preview" data-outcome={outcome}>
          {preview.value.repositories.map((repo) => (
            <div key={repo.repositoryId}>
              {repo.outcome === 'clean' ? 'Merges cleanly.' : null}
              {repo.outcome === 'up_to_date' ? 'Nothing to merge: the base has it all.' : null}
              {repo.outcome === 'blocked'
                ? `Cannot merge now: ${BLOCKED_TEXT[repo.blockedBy ?? ''] ?? repo.blockedBy}.`
                : null}
              {repo.outcome === 'conflicts' ? (
                <>
                  Conflicts with the base in:
                  <ul>
                    {(repo.conflicts ?? []).map((path) => (
                      <li key={path} data-testid="conflict-file">
                        {path}
                      </li>
                    ))}
                  </ul>
                </>
              ) : null}
            </div>
          ))}
        </div>
      ) : null}
      <div class="actions">
        <Choice
          label="Merge strategy"
          testId="merge-strategy"
          value={strategy}
          options={STRATEGIES}
          onChange={setStrategy}
        />
        <input
          data-testid="merge-message"
          placeholder="commit message (optional)"
          value={message}
          size={40}
          onInput={(e) => setMessage(e.currentTarget.value)}
        />
        <button type="button" data-testid="merge" disabled={busy || outcome !== 'clean'} onClick={() => void merge()}>
          Merge
        </button>
        <button
          type="button"
          data-testid="rebase"
          disabled={busy}
          onClick={() => void act(async () => void (await api.send('POST', `/v1/tasks/${taskId}/rebase`, {})))}
        >
          Rebase onto the base
        </button>
        {latest?.state === 'merged' ? (
          <button
            type="button"
            data-testid="undo-merge"
            disabled={busy}
            onClick={() => void act(() => api.send<Merge>('POST', `/v1/merges/${latest.operationId}/undo`))}
          >
            Undo the merge
          </button>
        ) : null}
      </div>
      <MaybeError error={error} />
      {result ? (
        <p data-testid="merge-result" data-state={result.state}>
          {result.strategy} {result.state}
          {result.error ? `: ${result.error.message}` : ''}
        </p>
      ) : null}
      <MaybeError error={merges.error} />
      {merges.value && merges.value.length > 0 ? (
        <ul>
          {merges.value.map((m) => (
            <li key={m.operationId}>
              {m.strategy}: {m.state}{' '}
              {m.links.temporal ? (
                <a href={m.links.temporal} target="_blank" rel="noopener noreferrer" data-testid="temporal-link">
                  run
                </a>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
