/**
 * task-diff/<id>: a task's diff read on the host that holds its repositories, for a gateway on
 * another host [R8.1]. Read-only, nothing recorded; a host that does not take it in time is
 * `host_unavailable`.
 */
import type { DiffRequest, RepositoryDiff } from '../domain/task-diff';
import { hostQuestion } from './activity-proxies';
import { askHost } from './host-questions';

export async function readTaskDiffOnHost(input: { hostId: string; request: DiffRequest }): Promise<RepositoryDiff[]> {
  return askHost(() => hostQuestion(input.hostId).readTaskDiff(input.request));
}
