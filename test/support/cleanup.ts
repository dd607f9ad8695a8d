/** Waiting on cleanup jobs through the public API. */
import { expect } from 'vitest';
import type { Harness } from './harness';
import { OPERATOR_TOKEN } from './harness';

export async function waitForJob(
  h: Harness,
  operationId: string,
  states: string[] = ['succeeded'],
  timeoutMs = 60_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let last: any;
  while (Date.now() < deadline) {
    const res = await h.api('GET', `/v1/cleanup-jobs/${operationId}`);
    last = res.body;
    if (res.status === 200 && states.includes(res.body.state)) return res.body;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`cleanup job did not reach ${states.join('|')}: ${JSON.stringify(last)}`);
}

export async function archive(h: Harness, taskId: string, body: Record<string, unknown> = {}) {
  const res = await h.api('POST', `/v1/tasks/${taskId}/archive`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return res.body as { operationId: string; workflowId: string; links: { temporal?: string } };
}

export function deleteTask(h: Harness, taskId: string, query = '') {
  return h.api('DELETE', `/v1/tasks/${taskId}${query ? `?${query}` : ''}`, undefined, OPERATOR_TOKEN);
}

/** Releases the harness host's idle workspaces now (operator) and waits for `taskId`'s release job to succeed. */
export async function releaseIdleTask(h: Harness, taskId: string): Promise<any> {
  const res = await h.api('POST', '/v1/idle-release', { hostId: h.config.hostId, idleForMs: 1 }, OPERATOR_TOKEN);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return waitForJob(h, res.body.released.find((x: any) => x.taskId === taskId).operationId);
}

/** A task's saved-work entries in one repository (`GET /v1/repositories/:id/saved-work`). */
export async function savedWorkOf(h: Harness, repositoryId: string, taskId: string): Promise<any[]> {
  const items: any[] = (await h.api('GET', `/v1/repositories/${repositoryId}/saved-work`)).body.items;
  return items.filter((i) => i.taskId === taskId);
}
