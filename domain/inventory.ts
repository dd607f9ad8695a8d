/**
 * The inventory merge rule [R4]: the worktree id decides.
 * - An incoming row without a worktree id (inventory-only) may update position and error,
 *   but never clears or replaces an existing worktree id, path or branch [R4.1].
 * - An incoming row with a worktree id replaces id, path and branch together [R4.2].
 */
interface WorktreeIdentity {
  /** git's worktree id on the host; null for a remote executor's row (inventory-only plus its remote path). */
  worktreeId: string | null;
  worktreePath: string;
  worktreeBranch: string;
  /**
   * What the step that recorded this identity made itself (the branch created from the base, the
   * worktree added) rather than found. It belongs to the identity: replaced with it, kept with it.
   * Absent: unknown, read as found (an undo never removes what it cannot prove it made).
   */
  made?: { branch: boolean; worktree: boolean };
}

export interface InventoryFields {
  identity: WorktreeIdentity | null;
  headCommit: string | null;
  position: number;
  error: string | null;
}

export function mergeInventoryRow(existing: InventoryFields | null, incoming: InventoryFields): InventoryFields {
  if (!existing) return incoming;
  if (incoming.identity) {
    return {
      identity: { ...incoming.identity },
      headCommit: incoming.headCommit,
      position: incoming.position,
      error: incoming.error,
    };
  }
  return {
    identity: existing.identity,
    headCommit: existing.headCommit,
    position: incoming.position,
    error: incoming.error,
  };
}
