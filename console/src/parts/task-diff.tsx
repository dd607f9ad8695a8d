/**
 * The task's diff by file (GET /v1/tasks/:id/diff?patch=1): a file list per repository and the
 * selected file's hunks drawn by react-diff-view, which renders the patch's text as text nodes.
 * The patch is cut into files by their real names, and a file's part that react-diff-view's
 * parser cannot read whole is shown as the plain text it is, never dropped (diff-parts.ts).
 * Read when asked (the refresh button), not on every change: a diff costs a git run per repository.
 */
import { useMemo, useState } from 'preact/hooks';
import { Diff, Hunk } from 'react-diff-view';
import 'react-diff-view/style/index.css';
import { partsByPath } from '../diff-parts';
import { useSession } from '../session-context';
import { useResource } from '../use-resource';
import { MaybeError } from './error-view';

interface DiffFile {
  path: string;
  previousPath?: string;
  status: string;
  additions: number;
  deletions: number;
  binary: boolean;
  uncommitted: boolean;
}
/** A file of the list, or (path null) the parts of a patch whose file names could not be read. */
interface Chosen {
  repositoryId: string;
  path: string | null;
}
interface DiffAnswer {
  repositories: { repositoryId: string; baseBranch: string; files: DiffFile[]; patch?: string; truncated: boolean }[];
}

export function TaskDiff({ taskId }: { taskId: string }) {
  const { api } = useSession();
  const diff = useResource(
    () => api.get<DiffAnswer>(`/v1/tasks/${taskId}/diff?patch=1`),
    [api, taskId],
    () => false,
  );
  const [selected, setSelected] = useState<Chosen | null>(null);
  const parts = useMemo(
    () => new Map((diff.value?.repositories ?? []).map((r) => [r.repositoryId, partsByPath(r.patch)])),
    [diff.value],
  );
  const chosen = selected ?? firstFile(diff.value);
  const shown = chosen ? (parts.get(chosen.repositoryId)?.get(chosen.path) ?? []) : [];

  return (
    <div class="panel">
      <h2>
        Diff{' '}
        <button type="button" data-testid="diff-refresh" onClick={diff.reload}>
          Refresh
        </button>
      </h2>
      <MaybeError error={diff.error} />
      {diff.value && diff.value.repositories.every((r) => r.files.length === 0) ? (
        <p class="quiet">No change.</p>
      ) : null}
      <div class="diff-layout">
        <ul class="diff-files">
          {diff.value?.repositories.flatMap((repo) => [
            ...(repo.truncated
              ? [
                  <li key={`${repo.repositoryId}-cut`} class="warn">
                    The diff is cut: it is too large to show whole.
                  </li>,
                ]
              : []),
            ...repo.files.map((file, i) => (
              <li key={`${repo.repositoryId}:${i}`}>
                <button
                  type="button"
                  class={chosen?.repositoryId === repo.repositoryId && chosen.path === file.path ? 'selected' : ''}
                  data-testid="diff-file"
                  data-path={file.path}
                  onClick={() => setSelected({ repositoryId: repo.repositoryId, path: file.path })}
                >
                  {file.path}
                </button>
              </li>
            )),
            // Never dropped: parts of the patch no name could be read from are listed as such.
            ...(parts.get(repo.repositoryId)?.has(null)
              ? [
                  <li key={`${repo.repositoryId}-unnamed`}>
                    <button
                      type="button"
                      class={chosen?.repositoryId === repo.repositoryId && chosen.path === null ? 'selected' : ''}
                      data-testid="diff-unnamed"
                      onClick={() => setSelected({ repositoryId: repo.repositoryId, path: null })}
                    >
                      (a file whose name could not be read)
                    </button>
                  </li>,
                ]
              : []),
          ])}
        </ul>
        <div class="diff-view" data-testid="diff-view">
          {chosen ? <FileHeader file={fileOf(diff.value, chosen)} /> : null}
          {shown.map(({ section, parsed }, i) =>
            parsed ? (
              <Diff key={i} viewType="unified" diffType={parsed.type} hunks={parsed.hunks}>
                {(hunks) => hunks.map((hunk, h) => <Hunk key={h} hunk={hunk} />)}
              </Diff>
            ) : (
              <pre key={i} class="diff-raw" data-testid="diff-raw">
                {section.text}
              </pre>
            ),
          )}
          {chosen && shown.length === 0 ? <p class="quiet">No text change to show (binary, or past the cut).</p> : null}
        </div>
      </div>
    </div>
  );
}

function firstFile(answer: DiffAnswer | undefined): Chosen | null {
  for (const repo of answer?.repositories ?? [])
    if (repo.files[0]) return { repositoryId: repo.repositoryId, path: repo.files[0].path };
  return null;
}

function fileOf(answer: DiffAnswer | undefined, chosen: Chosen) {
  return answer?.repositories
    .find((r) => r.repositoryId === chosen.repositoryId)
    ?.files.find((f) => f.path === chosen.path);
}

function FileHeader({ file }: { file: DiffFile | undefined }) {
  if (!file) return null;
  return (
    <p>
      <b>{file.path}</b> {file.previousPath ? `(was ${file.previousPath}) ` : ''}· {file.status}
      {file.uncommitted ? ' · uncommitted' : ''} · +{file.additions} −{file.deletions}
      {file.binary ? ' · binary' : ''}
    </p>
  );
}
