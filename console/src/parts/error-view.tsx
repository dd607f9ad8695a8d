/**
 * An API failure in words: its message, what to do (its `action`), the files a conflict names
 * (`conflicts: [{repositoryId, paths}]` of a merge or rebase), and its error id for a report.
 */
import { actionText, type ApiFailure } from '../api';
import { PathList } from './path-list';

/** The files of a refusal's `conflicts`, when it has them (a shape the page does not know shows nothing). */
function conflictPaths(error: ApiFailure): string[] {
  const conflicts = error.body.conflicts;
  if (!Array.isArray(conflicts)) return [];
  return conflicts.flatMap((c: { paths?: unknown }) =>
    Array.isArray(c?.paths) ? c.paths.filter((p): p is string => typeof p === 'string') : [],
  );
}

function ErrorView({ error }: { error: ApiFailure }) {
  const errorId = typeof error.body.errorId === 'string' ? error.body.errorId : null;
  const paths = conflictPaths(error);
  return (
    <div class="error" role="alert" data-testid="error" data-code={error.body.code}>
      <strong>{error.body.message}</strong> <span>{actionText(error.body.action)}</span>
      {errorId ? <small> (error id {errorId})</small> : null}
      {paths.length > 0 ? (
        <>
          {' '}
          Conflicting files:
          <PathList paths={paths} testId="error-conflict-file" />
        </>
      ) : null}
    </div>
  );
}

/** The failure of a read, or of the last action, when there is one. */
export function MaybeError({ error }: { error: ApiFailure | null | undefined }) {
  return error ? <ErrorView error={error} /> : null;
}
