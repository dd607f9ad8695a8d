/**
 * The check an SSH target passes once, before it is registered: the pinned host key is the one
 * presented, this service's key is accepted, and the workspace root is an existing directory, by
 * its real path (no symlink anywhere in it), in which the user can create and remove a folder.
 */
import type { SshTarget } from './connection';
import { namedScript, runRemote } from './remote-exec';

// "$1" is the workspace root (absolute: validated before). A probe folder, made and removed,
// proves writability where `test -w` would trust permission bits alone (a read-only mount).
const CHECK_WORKSPACE_ROOT = namedScript(
  'check workspace root',
  '[ -d "$1" ] && [ "$(realpath -e -- "$1")" = "$1" ] && probe=$(mktemp -d "$1/.tws-probe.XXXXXX") && rmdir -- "$probe"',
);
const CHECK_TIMEOUT_MS = 30_000;

/** `usable`, or why not; a target that cannot be reached or is not the pinned host throws its SshRefusal. */
export async function checkSshTarget(target: SshTarget): Promise<'usable' | 'workspace_root_unusable'> {
  // A connection of the check's own, closed after it: a check of settings not stored yet (a
  // PATCH) neither closes nor is closed by the pooled connection of work on the same target in
  // this process (a worker in the gateway's process keys its connection by the stored settings).
  const result = await runRemote(target, CHECK_WORKSPACE_ROOT, [target.workspaceRoot], {
    timeoutMs: CHECK_TIMEOUT_MS,
    unpooled: true,
  });
  return result.code === 0 ? 'usable' : 'workspace_root_unusable';
}
