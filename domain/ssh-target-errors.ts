/**
 * The error contract's rows for SSH targets (their registration, change and removal), beside the
 * rest of the table in domain/errors.ts.
 */
import type { ErrorRule } from './error-codes';

type SshTargetCode =
  'workspace_root_unusable' | 'ssh_host_key_mismatch' | 'ssh_target_name_taken' | 'ssh_target_in_use';

export const SSH_TARGET_ERROR_TABLE: Record<SshTargetCode, ErrorRule> = {
  // An SSH target's workspace root is not a directory (by its real path) its user can write to:
  // only an operator can make it one (or register the target with another).
  workspace_root_unusable: {
    status: 503,
    recoverable: false,
    retryAfterMs: 0,
    action: 'operator',
    message: "The SSH target's workspace root is not an existing directory (by its real path) its user can write to.",
  },
  // The SSH target presented a host key other than the pinned one (or none pinned matches): it is
  // not provably the machine the operator registered, and only an operator can say whether it is.
  ssh_host_key_mismatch: {
    status: 409,
    recoverable: false,
    retryAfterMs: 0,
    action: 'operator',
    message: 'The SSH target did not present its pinned host key.',
  },
  ssh_target_name_taken: {
    status: 409,
    recoverable: false,
    retryAfterMs: 0,
    action: 'none',
    message: 'An SSH target with this name is already registered.',
  },
  // A delete of an SSH target that environments or their worktrees (inventory rows) still name, or a
  // change of its workspace root under them: their work and their cleanup need the target as it is.
  ssh_target_in_use: {
    status: 409,
    recoverable: false,
    retryAfterMs: 0,
    action: 'operator',
    message:
      'Task environments still use this SSH target; delete those tasks (their cleanup ends) before removing it or moving its workspace root.',
  },
};
