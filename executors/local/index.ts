/**
 * The `local` executor: the agent works in the registered source checkout itself. Nothing is
 * made for it and nothing of it is ever removed: its inventory row names the checkout, and a
 * cleanup counts that row done (`inventory_only`) without touching the folder.
 */
import type { Executor } from '../executor';
import type { HostOperations } from '../host';
import { validateOnHost } from '../host/validation';
import type { ActivityDeps } from '../support/deps';
import { localSlotProblem } from './validate';

export function localExecutor(deps: ActivityDeps, host: HostOperations): Executor {
  return {
    kind: 'local',
    ...host,
    materialize: async () => [], // the source checkout is the workspace: nothing to create
    discard: async () => {}, // and nothing a launch made to undo
    validate: (plan) =>
      validateOnHost(deps, plan, {
        workspaceIsFolder: false,
        slotProblem: (slot) => localSlotProblem(slot, deps.config.gitBinary),
      }),
    removeAudited: async () => ({ outcome: 'inventory_only' }),
  };
}
