/** An API failure in words: its message, what to do (its `action`), and its error id for a report. */
import { actionText, type ApiFailure } from '../api';

function ErrorView({ error }: { error: ApiFailure }) {
  const errorId = typeof error.body.errorId === 'string' ? error.body.errorId : null;
  return (
    <div class="error" role="alert" data-testid="error" data-code={error.body.code}>
      <strong>{error.body.message}</strong> <span>{actionText(error.body.action)}</span>
      {errorId ? <small> (error id {errorId})</small> : null}
    </div>
  );
}

/** The failure of a read, or of the last action, when there is one. */
export function MaybeError({ error }: { error: ApiFailure | null | undefined }) {
  return error ? <ErrorView error={error} /> : null;
}
