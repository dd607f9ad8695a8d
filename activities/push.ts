/**
 * Pushing refs of a repository held by this host to its remote [R8.6] (git/push.ts): a task's
 * branch, or a base after a merge. A failure is typed: `push_failed` (the remote refused or did
 * not answer, or the push could not be made) or `invalid_request` (a ref to push is missing), each
 * with its reason; git's words go to the log only, redacted.
 */
import { pushRefs, PushFailure, type PushedRef, type PushRefsInput } from '../git/push';
import type { ActivityDeps } from '../executors/support/deps';
import { typedFailure } from '../executors/support/failures';
import { withHeartbeat } from '../executors/support/heartbeat';

export function pushActivities({ config, logger }: ActivityDeps) {
  return {
    async pushRefs(input: PushRefsInput): Promise<PushedRef[]> {
      try {
        return await withHeartbeat('push', () =>
          pushRefs(input, { binary: config.gitBinary, operatorConfig: config.pushGitConfig }),
        );
      } catch (err) {
        if (!(err instanceof PushFailure)) throw err;
        logger.warn({ reason: err.reason, exitCode: err.exitCode, gitSays: err.gitSays }, 'push failed');
        if (err.reason === 'no_such_ref') throw typedFailure('invalid_request', { reason: 'no_such_ref' });
        throw typedFailure('push_failed', { reason: err.reason });
      }
    },
  };
}
