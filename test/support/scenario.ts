/** Steps through the public HTTP surface that many tests share. */
import { expect } from 'vitest';
import type { Harness } from './harness';

export async function registerRepo(h: Harness, repoPath: string, name: string): Promise<string> {
  const res = await h.api('POST', '/v1/repositories', { name, path: repoPath });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

export async function createTask(h: Harness, repositories: (string | { repositoryId: string; baseBranch?: string; checkoutBranch?: string })[], extra: Record<string, unknown> = {}): Promise<string> {
  const res = await h.api('POST', '/v1/tasks', {
    title: 'a task',
    repositories: repositories.map((r) => (typeof r === 'string' ? { repositoryId: r } : r)),
    ...extra,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

export const SLEEPER = ['sleep', '600'];

export function launch(h: Harness, taskId: string, body: Record<string, unknown> = {}) {
  return h.api('POST', `/v1/tasks/${taskId}/sessions`, { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER, ...body });
}

/** Every refusal body: the contract's shape and nothing that locates the user's files. */
export function expectSafeError(body: any, code: string, secrets: string[] = []): void {
  expect(body?.error?.code).toBe(code);
  expect(typeof body.error.message).toBe('string');
  expect(typeof body.error.recoverable).toBe('boolean');
  expect(typeof body.error.retryAfterMs).toBe('number');
  expect(typeof body.error.action).toBe('string');
  expect(typeof body.error.errorId).toBe('string');
  const text = JSON.stringify(body);
  expect(text).not.toMatch(/\/tmp\/|\/work\/|\/home\/|refs\/heads|tws\//);
  for (const secret of secrets) expect(text).not.toContain(secret);
}
