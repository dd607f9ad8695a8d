/**
 * The Temporal SDK's log, as the worker and the gateway write it to stderr: warnings and errors
 * only, as the SDK's own logger prints them, except a typed refusal. A launch refused `409
 * task_archived` is an outcome the caller is told, not a fault: the SDK logged it as "Workflow
 * failed" (and its activity's "Activity failed") with a stack trace of thirty lines, for every
 * ordinary refusal. Such an entry becomes one line: what was refused, and by which run.
 */
import { inspect } from 'node:util';
import { DefaultLogger, type LogEntry, type Logger } from '@temporalio/worker';
import { ERROR_TABLE, isErrorCode } from '../domain/errors';

/** The SDK's messages for a run or a step that ended with a failure. */
const FAILED = new Set(['Workflow failed', 'Activity failed']);

/** Each refusal's safe message (the contract's table), to its code: a failure's message is the table's. */
const CODE_OF_MESSAGE = new Map(
  Object.entries(ERROR_TABLE)
    .filter(([code]) => code !== 'internal')
    .map(([code, rule]) => [rule.message, code]),
);

/**
 * The code of a typed refusal (an ApplicationFailure whose type is a code of the contract,
 * `internal` aside), else null. A workflow's failure reaches the log from its sandbox as a plain
 * Error whose stack still begins `ApplicationFailure: <message>` (its type is not carried): then
 * its message, when it is a refusal's own, says which.
 */
export function refusalCodeOf(error: unknown): string | null {
  if (typeof error !== 'object' || error === null) return null;
  const { name, type, stack, message } = error as {
    name?: unknown;
    type?: unknown;
    stack?: unknown;
    message?: unknown;
  };
  if (name === 'ApplicationFailure' && typeof type === 'string')
    return isErrorCode(type) && type !== 'internal' ? type : null;
  if (typeof stack === 'string' && typeof message === 'string' && stack.startsWith(`ApplicationFailure: ${message}`))
    return CODE_OF_MESSAGE.get(message) ?? null;
  return null;
}

/** One line of the entry, with its run's names; null when the entry is not a typed refusal. */
export function refusalLine(entry: LogEntry): string | null {
  const code = FAILED.has(entry.message) ? refusalCodeOf(entry.meta?.error) : null;
  if (!code) return null;
  const meta = entry.meta ?? {};
  const names = ['workflowType', 'workflowId', 'activityType'].filter((k) => typeof meta[k] === 'string');
  const at = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
  return `${at} [INFO] refused ${code}: ${names.map((k) => `${k}=${String(meta[k])}`).join(' ')}`.trimEnd();
}

/** The SDK's logger for a service process (Runtime.install). */
export function serviceSdkLogger(): Logger {
  return new DefaultLogger('WARN', (entry) => {
    const line = refusalLine(entry);
    if (line !== null) {
      process.stderr.write(`${line}\n`);
      return;
    }
    const at = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
    process.stderr.write(
      `${at} [${entry.level}] ${entry.message}${entry.meta === undefined ? '' : ` ${inspect(entry.meta)}`}\n`,
    );
  });
}
