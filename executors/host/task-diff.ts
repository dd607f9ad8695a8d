/**
 * A task's diff read on the host that holds its repositories [R8.1]: a running agent's new
 * commits are brought home first (as for a git status), a worktree whose registration is not the
 * service's own is refused typed and never read, then each repository in turn, all of them within
 * one allowance of files and patch bytes.
 */
import type { Logger } from 'pino';
import type { Config } from '../../domain/config';
import type { DiffRequest, RepositoryDiff } from '../../domain/task-diff';
import { readRepositoryDiff } from '../../git/task-diff';
import { readyToRead } from './branch-home';

export async function readHostTaskDiff(
  { config, logger }: { config: Config; logger: Pick<Logger, 'warn'> },
  request: DiffRequest,
): Promise<RepositoryDiff[]> {
  const budget = { bytes: request.maxBytes, files: request.maxFiles };
  const answers: RepositoryDiff[] = [];
  for (const source of request.sources) {
    if (source.worktreePath) await readyToRead({ config, logger }, source.worktreePath, source.repositoryId);
    answers.push(
      await readRepositoryDiff(source, { patch: request.patch, path: request.path }, budget, {
        binary: config.gitBinary,
      }),
    );
  }
  return answers;
}
