/**
 * An SSH target's one check before it is registered, on the host that is to hold its key (the
 * gateway asks that host through its queue when it is not that host itself): the pinned host
 * key, this service's key, a usable workspace root (ssh/target-check.ts). A transport refusal is
 * the typed refusal of the same code, with its one-word reason.
 */
import type { SshTarget } from '../ssh/connection';
import { checkSshTarget } from '../ssh/target-check';
import type { ActivityDeps } from '../executors/support/deps';
import { typedSsh } from '../executors/ssh/workspace';

export function sshTargetCheckActivities(_deps: ActivityDeps) {
  return {
    async checkSshTargetHere(target: SshTarget): Promise<'usable' | 'workspace_root_unusable'> {
      return checkSshTarget(target).catch((err: unknown) => Promise.reject(typedSsh(err)));
    },
  };
}
