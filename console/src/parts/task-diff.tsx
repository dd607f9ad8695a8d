/**
 * The task's diff by file (GET /v1/tasks/:id/diff?patch=1): a file list per repository and the
 * selected file's hunks drawn by react-diff-view, which renders the patch's text as text nodes.
 * Read when asked (the refresh button), not on every change: a diff costs a git run per repository.
 */
import { useMemo, useState } from 'preact/hooks';
import { Diff, Hunk, parseDiff, type FileData } from 'react-diff-view';
import 'react-diff-view/style/index.css';
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
interface DiffAnswer {
  repositories: { repositoryId: string; baseBranch: string; files: DiffFile[]; patch?: string; truncated: boolean }[];
}

/** A parsed file by the path the API names it with (its new path; a deleted file's old one). */
function filesByPath(patch: string | undefined): Map<string, FileData[]> {
  const byPath = new Map<string, FileData[]>();
  if (!patch) return byPath;
  for (const file of parseDiff(patch, { nearbySequences: 'zip' })) {
    const path = file.type === 'delete' ? file.oldPath : file.newPath;
    byPath.set(path, [...(byPath.get(path) ?? []), file]);
  }
  return byPath;
}

export function TaskDiff({ taskId }: { taskId: string }) {
  const { api } = useSession();
  const diff = useResource(
    () => api.get<DiffAnswer>(`/v1/tasks/${taskId}/diff?patch=1`),
    [api, taskId],
    () => false,
  );
  const [selected, setSelected] = useState<{ repositoryId: string; path: string } | null>(null);
  const parsed = useMemo(
    () => new Map((diff.value?.repositories ?? []).map((r) => [r.repositoryId, filesByPath(r.patch)])),
    [diff.value],
  );
  const chosen = selected ?? firstFile(diff.value);
  const shown = chosen ? (parsed.get(chosen.repositoryId)?.get(chosen.path) ?? []) : [];

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
            ...repo.files.map((file) => (
              <li key={`${repo.repositoryId}:${file.path}`}>
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
          ])}
        </ul>
        <div class="diff-view" data-testid="diff-view">
          {chosen ? <FileHeader file={fileOf(diff.value, chosen)} /> : null}
          {shown.map((file, i) => (
            <Diff key={i} viewType="unified" diffType={file.type} hunks={file.hunks}>
              {(hunks) => hunks.map((hunk) => <Hunk key={hunk.content} hunk={hunk} />)}
            </Diff>
          ))}
          {chosen && shown.length === 0 ? <p class="quiet">No text change to show (binary, or past the cut).</p> : null}
        </div>
      </div>
    </div>
  );
}

function firstFile(answer: DiffAnswer | undefined) {
  for (const repo of answer?.repositories ?? [])
    if (repo.files[0]) return { repositoryId: repo.repositoryId, path: repo.files[0].path };
  return null;
}

function fileOf(answer: DiffAnswer | undefined, chosen: { repositoryId: string; path: string }) {
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
