/**
 * repository-check/<id>: a repository's checks, run on the host that is to hold it. A host whose
 * worker does not take the question in time is refused `host_unavailable` (nothing is recorded).
 */
import { ApplicationFailure, TemporalFailure } from '@temporalio/workflow';
import type { RepositoryCheck } from '../git/repository-check';
import { hostQuestion } from './activity-proxies';

export async function checkRepositoryOnHost(input: { hostId: string; path: string; defaultBranch?: string }): Promise<RepositoryCheck> {
  try {
    return await hostQuestion(input.hostId).checkRepository({ path: input.path, defaultBranch: input.defaultBranch });
  } catch (err) {
    for (let cur: unknown = err; cur instanceof Error; cur = (cur as TemporalFailure).cause) {
      if (cur.name === 'TimeoutFailure') throw ApplicationFailure.create({ type: 'host_unavailable', message: 'The host did not answer.', nonRetryable: true });
    }
    throw err;
  }
}
