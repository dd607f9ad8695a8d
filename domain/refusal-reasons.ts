/**
 * What a refusal says when its `reason` says more than its code's message (domain/errors.ts): a
 * refusal of the same code for another cause keeps the table's, or its route's, message. Written
 * for the caller: what happened and what to do, never a path, a branch name or a secret.
 */
import type { ErrorCode } from './error-codes';

const REASON_MESSAGES: Partial<Record<ErrorCode, Record<string, string>>> = {
  invalid_request: {
    // By design (docs/executors.md): a `local` agent runs as the checkout's owner, and never as root.
    local_checkout_owned_by_root:
      "A local agent runs as the owner of the repository's checkout, and this checkout is owned by root, which agents never run as. Give the checkout to the user who works in it (chown), or launch with the worktree executor.",
  },
};

/** The message of a refusal for this reason, or undefined where its code's own says enough. */
export function reasonMessage(code: ErrorCode, reason: unknown): string | undefined {
  return typeof reason === 'string' ? REASON_MESSAGES[code]?.[reason] : undefined;
}
