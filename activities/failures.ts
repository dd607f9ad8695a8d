import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { outageOf } from '../domain/outage';

/** Tries a step gets for a fault that is not an outage (a bug, a missing table): it then fails its workflow, as before. */
export const RECORD_FAULT_ATTEMPTS = 6;
export const HOST_FAULT_ATTEMPTS = 4;

/**
 * Record steps, and a launch's own host steps, retry without limit (workflows/activity-proxies.ts)
 * so that they outlast a database outage. Anything else is not waited out: after `faultAttempts`
 * tries it fails for good, so a broken step ends its workflow (and its request) instead of
 * hanging it for ever. Typed outcomes pass as they are.
 */
export function outlastingOutages<T extends Record<string, (...args: any[]) => Promise<unknown>>>(
  steps: T,
  faultAttempts: number,
): T {
  const wrapped: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
  for (const [name, step] of Object.entries(steps)) {
    wrapped[name] = async (...args: unknown[]) => {
      try {
        return await step(...args);
      } catch (err) {
        if (err instanceof ApplicationFailure || outageOf(err) === 'database') throw err;
        if (Context.current().info.attempt < faultAttempts) throw err;
        throw ApplicationFailure.create({
          type: 'step_failed',
          message: err instanceof Error ? err.message : String(err),
          nonRetryable: true,
          cause: err instanceof Error ? err : undefined,
        });
      }
    };
  }
  return wrapped as T;
}
