/**
 * The merge: the preview for the chosen strategy (GET /v1/tasks/:id/merge-preview), merge with a
 * message (POST /v1/tasks/:id/merge, `Prefer: wait` and an Idempotency-Key per click; a task
 * blocked only by uncommitted work merges once the person lets the merge commit it), rebase (what
 * moved, or the refusal with its conflicting files), and undo of the latest merge; the task's
 * merges each with its run in the Temporal UI.
 */
import { useState } from 'preact/hooks';
import { allPages, type ApiFailure } from '../api';
import { BLOCKED_TEXT, idempotencyKey, overallOutcome, type Outcome } from '../merge-outcome';
import { useSession } from '../session-context';
import { useResource } from '../use-resource';
import { Choice } from './choice';
import { MaybeError } from './error-view';
import { PathList } from './path-list';

const STRATEGIES = ['squash', 'merge', 'fast_forward', 'rebase'];

interface Preview {
  repositories: { repositoryId: string; outcome: Outcome; conflicts?: string[]; blockedBy?: string }[];
}
interface Rebase {
  repositories: { repositoryId: string; before: string; after: string }[];
}
interface Merge {
  operationId: string;
  strategy: string;
  state: string;
  error?: { message: string };
  links: { temporal?: string };
}

/** What a rebase did, in words: how many of the task's branches moved onto their base. */
function rebaseText(rebase: Rebase): string {
  const moved = rebase.repositories.filter((r) => r.before !== r.after).length;
  if (moved === 0) return 'Rebased: the task was already on its base; nothing moved.';
  return `Rebased onto the base: ${moved === 1 ? 'its branch moved' : `${moved} branches moved`}.`;
}

export function TaskMerge({ taskId, onChanged }: { taskId: string; onChanged: () => void }) {
  const { api } = useSession();
  const [strategy, setStrategy] = useState('squash');
  const [message, setMessage] = useState('');
  const [error, setError] = useState<ApiFailure | null>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<Merge | null>(null);
  const [rebased, setRebased] = useState<Rebase | null>(null);
  // The person's consent that the merge commits the worktree's uncommitted work first (`commitUncommitted`).
  const [commitUncommitted, setCommitUncommitted] = useState(false);
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
  // Blocked only by uncommitted work: the merge may go once the person lets it commit that work.
  const onlyUncommitted =
    outcome === 'blocked' &&
    (preview.value?.repositories ?? []).every((r) => r.outcome !== 'blocked' || r.blockedBy === 'uncommitted_changes');
  const mergeable = outcome === 'clean' || (onlyUncommitted && commitUncommitted);
  const latest = merges.value?.[0];

  async function act(run: () => Promise<Merge | undefined>) {
    setError(null);
    setRebased(null);
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
        {
          strategy,
          ...(message.trim() ? { message } : {}),
          ...(onlyUncommitted && commitUncommitted ? { commitUncommitted: true } : {}),
        },
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
                  <PathList paths={repo.conflicts ?? []} testId="conflict-file" />
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
        {onlyUncommitted ? (
          <label>
            <input
              type="checkbox"
              data-testid="consent-commit"
              checked={commitUncommitted}
              onChange={(e) => setCommitUncommitted(e.currentTarget.checked)}
            />{' '}
            Commit its uncommitted work with the merge
          </label>
        ) : null}
        <button type="button" data-testid="merge" disabled={busy || !mergeable} onClick={() => void merge()}>
          Merge
        </button>
        <button
          type="button"
          data-testid="rebase"
          disabled={busy}
          onClick={() =>
            void act(async () => {
              setRebased(await api.send<Rebase>('POST', `/v1/tasks/${taskId}/rebase`, {}));
              return undefined;
            })
          }
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
      {rebased ? <p data-testid="rebase-result">{rebaseText(rebased)}</p> : null}
      {result ? (
        <p data-testid="merge-result" data-state={result.state}>
          {result.strategy} {result.state}
          {result.error ? `: ${result.error.message}` : ''}
        </p>
      ) : null}
      <MaybeError error={merges.error} />
      {merges.value && merges.value.length > 0 ? (
        <ul data-testid="merge-list">
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
