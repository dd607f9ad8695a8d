/**
 * Questions answered on a host, through its queue: the git status of an environment, the orphan
 * sweep of a host's root, a repository's checks, an agent's log. A host that does not answer is
 * refused `host_unavailable`.
 */
import type { Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import type { Config } from '../../../domain/config';
import type { ErrorCode } from '../../../domain/errors';
import {
  agentLogWorkflowId,
  gitStatusWorkflowId,
  orphanSweepWorkflowId,
  repositoryCheckWorkflowId,
  sshTargetCheckWorkflowId,
} from '../../../domain/workflow-ids';
import type { SshTarget } from '../../../ssh/connection';
import type { RepositoryCheck, RepositoryCheckInput } from '../../../git/repository-check';
import type {
  checkRepositoryOnHost,
  checkSshTargetOnHost,
  observeGitStatus,
  orphanSweep,
  readAgentLogOnHost,
} from '../../../workflows';
import type { LogRead, LogSource } from '../../../domain/agent-log';
import { EngineRefusal, typedRefusalOf } from './typed-outcome';

/** git-status/<environmentId>: concurrent readers of one environment share one observation run. */
export async function observeGitStatusOf(client: Client, config: Config, environmentId: string) {
  return client.workflow.execute<typeof observeGitStatus>('observeGitStatus', {
    workflowId: gitStatusWorkflowId(environmentId),
    taskQueue: config.taskQueue,
    args: [environmentId],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
  });
}

/** orphan-sweep/<runId>: an operator's sweep of this host's workspace root. */
export async function runOrphanSweep(client: Client, config: Config, hostId: string, dryRun: boolean) {
  return client.workflow.execute<typeof orphanSweep>('orphanSweep', {
    workflowId: orphanSweepWorkflowId(randomUUID()),
    taskQueue: config.taskQueue,
    args: [{ hostId, graceMs: config.orphanGraceMs, dryRun }],
  });
}

/** A repository's checks on the host that is to hold it; `host_unavailable` when that host does not answer. */
export async function checkRepositoryOn(
  client: Client,
  config: Config,
  hostId: string,
  input: RepositoryCheckInput,
): Promise<RepositoryCheck | { ok: false; code: ErrorCode }> {
  try {
    return await client.workflow.execute<typeof checkRepositoryOnHost>('checkRepositoryOnHost', {
      workflowId: repositoryCheckWorkflowId(randomUUID()),
      taskQueue: config.taskQueue,
      args: [{ hostId, ...input }],
    });
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, code: refusal.code };
    throw err;
  }
}

/** An SSH target's check on the host that is to hold its key; a refusal (the host's, or the target's over SSH) is typed. */
export async function checkSshTargetOn(
  client: Client,
  config: Config,
  hostId: string,
  target: SshTarget,
): Promise<
  | { ok: true; checked: 'usable' | 'workspace_root_unusable' }
  | { ok: false; code: ErrorCode; details: Record<string, unknown> }
> {
  try {
    const checked = await client.workflow.execute<typeof checkSshTargetOnHost>('checkSshTargetOnHost', {
      workflowId: sshTargetCheckWorkflowId(randomUUID()),
      taskQueue: config.taskQueue,
      args: [{ hostId, target }],
    });
    return { ok: true, checked };
  } catch (err) {
    const refusal = typedRefusalOf(err);
    if (refusal) return { ok: false, ...refusal };
    throw err;
  }
}

/**
 * An agent's log where it lives, on its host (for a gateway that is not that host): a source the
 * log route tails and follows. A host that does not answer: `host_unavailable`.
 */
export function logOnHost(
  client: Client,
  config: Config,
  hostId: string,
  logPath: string,
  sshTargetId: string | null = null,
): LogSource {
  const read = async (input: Omit<LogRead, 'logPath'>) => {
    try {
      const answer = await client.workflow.execute<typeof readAgentLogOnHost>('readAgentLogOnHost', {
        workflowId: agentLogWorkflowId(randomUUID()),
        taskQueue: config.taskQueue,
        args: [{ hostId, logPath, ...(sshTargetId ? { sshTargetId } : {}), ...input }],
      });
      return { chunk: Buffer.from(answer.base64, 'base64'), offset: answer.offset };
    } catch (err) {
      const refusal = typedRefusalOf(err);
      if (refusal) throw new EngineRefusal(refusal);
      throw err;
    }
  };
  return {
    tail: async (lines) => {
      const { chunk, offset } = await read({ lines });
      return { text: chunk, offset };
    },
    since: (offset) => read({ since: offset }),
  };
}
