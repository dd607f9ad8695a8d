/** The task's git status (GET /v1/tasks/:id/git-status): per repository its branch, ahead/behind and changed files. */
import { useSession } from '../session-context';
import { useResource } from '../use-resource';
import { MaybeError } from './error-view';

interface Status {
  repositories: {
    repositoryId: string;
    branch: string | null;
    ahead: number;
    behind: number;
    files: { path: string; status: string }[];
  }[];
}

/** `acted` counts the page's own actions: each one reads the status again (a rebase sends no change of its own). */
export function GitStatus({
  taskId,
  hasEnvironment,
  acted,
}: {
  taskId: string;
  hasEnvironment: boolean;
  acted: number;
}) {
  const { api } = useSession();
  const status = useResource(
    () => (hasEnvironment ? api.get<Status>(`/v1/tasks/${taskId}/git-status`) : Promise.resolve(null)),
    [api, taskId, hasEnvironment, acted],
    (change) => change.taskId === taskId,
  );
  return (
    <div class="panel" data-testid="git-status">
      <h2>Git status</h2>
      {!hasEnvironment ? <p class="quiet">No workspace yet: the first launch makes it.</p> : null}
      <MaybeError error={status.error} />
      {status.value?.repositories.map((repo) => (
        <div key={repo.repositoryId}>
          <p>
            <code>{repo.branch ?? '(detached)'}</code> · {repo.ahead} ahead, {repo.behind} behind ·{' '}
            {repo.files.length === 0 ? 'clean' : `${repo.files.length} changed`}
          </p>
          <ul>
            {repo.files.map((file) => (
              <li key={file.path}>
                <code>{file.status}</code> {file.path}
              </li>
            ))}
          </ul>
        </div>
      ))}
    </div>
  );
}
