/**
 * `tws diff <taskId> [--patch]`: a task's diff [R8.1] as a person reads it, per repository its
 * branch against its base and one line per file (status, +/-, uncommitted); `--patch` the patch
 * itself, committed part first. A file name is printed as it is unless it holds a control
 * character (a newline, an escape): then quoted, so no name can forge a line or steer a terminal.
 */
import type { DiffFile as DiffFileView, RepositoryDiff as RepositoryDiffView } from '../../domain/task-diff';
import { json, type Target } from './cli-io';

const LETTER: Record<string, string> = {
  added: 'A',
  modified: 'M',
  deleted: 'D',
  renamed: 'R',
  type_changed: 'T',
  untracked: '?',
};

const shown = (name: string): string => (/[\u0000-\u001f\u007f-\u009f]/.test(name) ? JSON.stringify(name) : name);

function fileLine(f: DiffFileView): string {
  const counts = f.binary ? 'binary' : `+${f.additions} -${f.deletions}`;
  const name = f.previousPath !== undefined ? `${shown(f.previousPath)} -> ${shown(f.path)}` : shown(f.path);
  return `  ${LETTER[f.status] ?? '?'} ${counts.padEnd(12)} ${name}${f.uncommitted ? '  (uncommitted)' : ''}`;
}

function repositoryReport(r: RepositoryDiffView): string {
  const short = (c: string | null) => (c ? c.slice(0, 12) : '-');
  const head =
    r.head === null
      ? `${r.repositoryId}  no task branch yet (base ${r.baseBranch})`
      : `${r.repositoryId}  ${short(r.head)} against ${r.baseBranch}: ahead ${r.ahead}, behind ${r.behind}, merge base ${short(r.mergeBase)}`;
  const files = r.files.length > 0 ? r.files.map(fileLine) : ['  (no changes)'];
  return [head, ...files, ...(r.truncated ? ['  (cut at the service limits: more changes than shown)'] : [])].join(
    '\n',
  );
}

export async function diffCommand(
  t: Target,
  taskId: string,
  opts: { patch: boolean; asJson: boolean },
  out: (s: string) => void,
): Promise<void> {
  const body = (await json(t, 'GET', `/v1/tasks/${taskId}/diff${opts.patch ? '?patch=1' : ''}`)) as {
    repositories: RepositoryDiffView[];
  };
  if (opts.asJson) out(`${JSON.stringify(body, null, 2)}\n`);
  else if (opts.patch) out(body.repositories.map((r) => r.patch ?? '').join(''));
  else out(`${body.repositories.map(repositoryReport).join('\n\n') || '(no repositories)'}\n`);
}
