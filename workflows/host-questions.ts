/**
 * Questions to a host, each a short workflow whose one activity runs on the host's queue:
 * repository-check/<id> (a repository's checks, on the host that is to hold it),
 * ssh-target-check/<id> (an SSH target's check, on the host that holds its key) and
 * agent-log/<id> (a part of an agent's log). A host whose worker does not take the question in
 * time is refused `host_unavailable` (nothing is recorded).
 */
import { ActivityFailure, ApplicationFailure, type TemporalFailure } from '@temporalio/workflow';
import type { LogRead } from '../domain/agent-log';
import type { RepositoryCheck } from '../git/repository-check';
import type { SshTarget } from '../ssh/connection';
import { hostQuestion } from './activity-proxies';

export async function checkRepositoryOnHost(input: {
  hostId: string;
  path: string;
  defaultBranch?: string;
  identity?: boolean;
}): Promise<RepositoryCheck> {
  return askHost(() =>
    hostQuestion(input.hostId).checkRepository({
      path: input.path,
      defaultBranch: input.defaultBranch,
      ...(input.identity ? { identity: true } : {}),
    }),
  );
}

/** A question to a host: its answer, or `host_unavailable` when no worker of the host took it in time. */
export async function askHost<T>(question: () => Promise<T>): Promise<T> {
  try {
    return await question();
  } catch (err) {
    for (let cur: unknown = err; cur instanceof Error; cur = (cur as TemporalFailure).cause) {
      if (cur.name === 'TimeoutFailure')
        throw ApplicationFailure.create({
          type: 'host_unavailable',
          message: 'The host did not answer.',
          nonRetryable: true,
        });
    }
    // The host's own typed refusal is the answer.
    if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure) throw err.cause;
    throw err;
  }
}

/** agent-log/<id>: a part of an agent's log, read on the agent's host for a gateway elsewhere. */
export async function readAgentLogOnHost(
  input: { hostId: string } & LogRead,
): Promise<{ base64: string; offset: number }> {
  const { hostId, ...read } = input;
  return askHost(() => hostQuestion(hostId).readAgentLog(read));
}

/** ssh-target-check/<id>: an SSH target's check before it is registered, on the host that is to hold its key. */
export async function checkSshTargetOnHost(input: {
  hostId: string;
  target: SshTarget;
}): Promise<'usable' | 'workspace_root_unusable'> {
  return askHost(() => hostQuestion(input.hostId).checkSshTargetHere(input.target));
}
