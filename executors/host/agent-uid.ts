/**
 * The host uid a workspace's agents run as: a worktree environment's own
 * (db/agent-uids.ts), or for a `local` agent the source checkout's owner; read by every start and,
 * for a new task, while its first launch makes the workspace.
 */
import { lstat } from 'node:fs/promises';
import { AgentUidsExhausted, agentUidOf, environmentUidOwner } from '../../db/agent-uids';
import type { Db } from '../../db/pool';
import { isWithinFolder } from '../../domain/task-layout';
import type { LaunchPlan } from '../../domain/launch';
import type { StartAgentInput } from '../agent-start';
import type { ActivityDeps } from '../support/deps';
import { typedFailure } from '../support/failures';
import { agentSandbox } from './agent-sandbox';

/**
 * The host uid a sandboxed agent runs as, null without a sandbox: a worktree
 * environment's own (db/agent-uids.ts), or for a `local` agent (its workspace is the source
 * checkout, which holds its common git dir) the checkout's owner, as a person running an agent in
 * their checkout would: never root, which is refused (a worktree task is the way).
 */
export async function agentUid(
  deps: { pool: Db; config: ActivityDeps['config'] },
  input: StartAgentInput,
): Promise<number | null> {
  if (!(await agentSandbox(deps.config.agentSandbox))) return null;
  const inCheckout = (input.gitSlots ?? []).some((slot) => isWithinFolder(slot.commonDir, input.cwd));
  if (inCheckout) {
    const owner = (await lstat(input.cwd).catch(() => null))?.uid;
    if (owner === undefined) throw typedFailure('workspace_reuse_unsafe');
    if (owner === 0) throw typedFailure('invalid_request', { reason: 'local_checkout_owned_by_root' });
    return owner;
  }
  return environmentAgentUid(deps, input.environmentTaskId);
}

/** The uid of a worktree environment's agents (db/agent-uids.ts); a range used up is a typed refusal. */
export async function environmentAgentUid(
  deps: { pool: Db; config: ActivityDeps['config'] },
  environmentTaskId: string,
): Promise<number> {
  try {
    return await agentUidOf(deps.pool, environmentUidOwner(environmentTaskId), deps.config.agentUids);
  } catch (err) {
    if (err instanceof AgentUidsExhausted) throw typedFailure('internal', { reason: 'agent_uids_exhausted' });
    throw err;
  }
}

/**
 * The uid a new worktree workspace's agents will run as, or null where no give is needed (no
 * sandbox, an SSH clone, the source checkout). Read by a first launch while it makes the workspace:
 * for a new task it is a statement that takes the uid, off the launch's path.
 */
export async function newWorkspaceUid(
  deps: { pool: Db; config: ActivityDeps['config'] },
  plan: LaunchPlan,
): Promise<number | null> {
  // A container's agents run as the environment's uid whatever the host's sandbox (executors/container/).
  if (plan.executorType === 'container') return environmentAgentUid(deps, plan.environmentTaskId);
  if (plan.executorType !== 'worktree' || !(await agentSandbox(deps.config.agentSandbox))) return null;
  return environmentAgentUid(deps, plan.environmentTaskId);
}
