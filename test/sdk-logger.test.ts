import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { refusalCodeOf, refusalLine } from '../worker/sdk-logger';

const entry = (message: string, error: unknown, meta: Record<string, unknown> = {}) => ({
  level: 'WARN' as const,
  message,
  meta: { error, ...meta },
  timestampNanos: 1_700_000_000_000_000_000n,
});

describe('the SDK log of a service process', () => {
  it('a typed refusal is one line naming its code and its run; a fault and anything else stay as they are', () => {
    const refused = ApplicationFailure.create({ type: 'task_archived', message: 'The task is archived.' });
    expect(refusalCodeOf(refused)).toBe('task_archived');
    expect(
      refusalLine(entry('Workflow failed', refused, { workflowType: 'launchSession', workflowId: 'launch/1' })),
    ).toBe('2023-11-14T22:13:20.000Z [INFO] refused task_archived: workflowType=launchSession workflowId=launch/1');
    // From the workflow's sandbox the failure arrives as a plain Error (its type not carried): its
    // stack's first line and its message, a refusal's own, say which.
    const fromSandbox = Object.assign(new Error('The task is archived.'), {
      stack: 'ApplicationFailure: The task is archived.\n    at create (workflows/typed-failure.ts:11:32)',
    });
    expect(refusalCodeOf(fromSandbox)).toBe('task_archived');
    const otherMessage = Object.assign(new Error('The launch failed unexpectedly.'), {
      stack: 'ApplicationFailure: The launch failed unexpectedly.\n    at create (x)',
    });
    expect(refusalCodeOf(otherMessage)).toBeNull();
    // A fault is logged as the SDK logs it: `internal`, an unknown type, a plain error.
    expect(refusalCodeOf(ApplicationFailure.create({ type: 'internal', message: 'x' }))).toBeNull();
    expect(refusalCodeOf(ApplicationFailure.create({ type: 'step_failed', message: 'x' }))).toBeNull();
    expect(refusalCodeOf(new Error('boom'))).toBeNull();
    expect(refusalLine(entry('Workflow failed', new Error('boom')))).toBeNull();
    expect(refusalLine(entry('Activity task failed', refused))).toBeNull();
  });
});
