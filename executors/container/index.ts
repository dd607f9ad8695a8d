/**
 * The `container` executor: the task's workspace is the `worktree` executor's (the same worktrees,
 * inventory, validation, git status and cleanup, executors/host/worktrees.ts: a move between the
 * two reuses them), and its
 * agents run in a container of the task environment, made from an image built here and reached
 * through the Docker Engine API (executors/container/containers.ts), entered by the host's agent
 * supervisor (executors/container/agents.ts). A stop, a log and a restart's recovery are the host's:
 * the supervisor is a host process. The task's cleanup removes its container (activities/cleanup-host.ts).
 */
import type { Executor } from '../executor';
import type { HostOperations } from '../host';
import { hostAgents } from '../host/agents';
import type { ActivityDeps } from '../support/deps';
import { hostWorktrees } from '../host/worktrees';
import { containerPlaceOf } from './agents';
import { removeIdleContainer } from './containers';

export function containerExecutor(deps: ActivityDeps, host: HostOperations): Executor {
  const worktrees = hostWorktrees(deps);
  return {
    kind: 'container',
    ...host,
    ...worktrees,
    startAgent: hostAgents(deps, containerPlaceOf(deps)).startAgent,
    async discard(plan, made) {
      await worktrees.discard(plan, made);
      // A failed first launch leaves nothing: its container goes too (unless another session's agent runs in it).
      if (plan.role === 'materialized') await removeIdleContainer(deps, plan.environmentId);
    },
  };
}
