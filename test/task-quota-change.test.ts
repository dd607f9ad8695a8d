/**
 * A task's disk quota after its creation (PATCH /v1/tasks/:id, operator): the `task_disk_quota`
 * refusal's advice can be followed. A real agent fills its real worktree past the quota, the
 * worker stops it and its launches are refused; an operator raises the quota and the launch that
 * was refused starts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, OPERATOR_TOKEN, USER_TOKEN, type Harness } from './support/harness';
import { createTask, expectSafeError, launch, registerRepo, waitUntil } from './support/scenario';
import { makeRepo, rowCounts } from './support/world';

const MIB = 1024 ** 2;
const GIB = 1024 ** 3;

let h: Harness;

beforeAll(async () => {
  // Usage read (and quotas checked) often enough to see within a test.
  h = await createHarness({ taskDiskQuotaBytes: 8 * MIB, diskQuotaCheckEveryMs: 300 });
});
afterAll(async () => h?.close());

const quotaOf = async (taskId: string) =>
  (await h.pool.query('SELECT disk_quota_bytes::float8 AS q FROM tasks WHERE id = $1', [taskId])).rows[0].q;

describe('an operator changes a task’s disk quota', () => {
  it('a launch refused task_disk_quota starts once an operator raises the quota; a user cannot, bad input changes nothing', async () => {
    const repo = makeRepo(h.scratch, 'quota-raised');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'quota-raised')]);
    const fill = ['sh', '-c', 'dd if=/dev/zero of=big bs=1M count=32 2>/dev/null; echo filled; sleep 600'];
    const filler = await launch(h, taskId, { command: fill });
    expect(filler.status, JSON.stringify(filler.body)).toBe(201);
    await waitUntil(
      async () => (await h.api('GET', `/v1/sessions/${filler.body.sessionId}`)).body.state === 'stopped',
      'the filler to be stopped at its quota',
    );

    const refused = await launch(h, taskId);
    expect(refused.status, JSON.stringify(refused.body)).toBe(507);
    expectSafeError(refused.body, 'task_disk_quota', [repo]);
    // The advice names what can be done now: an operator raises the quota on the task.
    expect(refused.body.error.message).toContain('PATCH /v1/tasks/:id');
    expect(refused.body.error.message).toContain('diskQuotaBytes');

    const counts = await rowCounts(h.pool);
    const byUser = await h.api('PATCH', `/v1/tasks/${taskId}`, { diskQuotaBytes: GIB }, USER_TOKEN);
    expect(byUser.status).toBe(403);
    for (const body of [
      {},
      { diskQuotaBytes: 0 },
      { diskQuotaBytes: 1.5 },
      { diskQuotaBytes: 'big' },
      { title: 'x' },
    ]) {
      const bad = await h.api('PATCH', `/v1/tasks/${taskId}`, body, OPERATOR_TOKEN);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expectSafeError(bad.body, 'invalid_request');
    }
    const missing = '00000000-0000-4000-8000-000000000000';
    expect((await h.api('PATCH', `/v1/tasks/${missing}`, { diskQuotaBytes: GIB }, OPERATOR_TOKEN)).status).toBe(404);
    expect(await quotaOf(taskId)).toBeNull();
    expect(await rowCounts(h.pool)).toEqual(counts);

    const raised = await h.api('PATCH', `/v1/tasks/${taskId}`, { diskQuotaBytes: GIB }, OPERATOR_TOKEN);
    expect(raised.status, JSON.stringify(raised.body)).toBe(200);
    expect(raised.body.limits).toMatchObject({ diskQuotaBytes: GIB, overDiskQuota: false });
    expect(await quotaOf(taskId)).toBe(GIB);
    const started = await launch(h, taskId);
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    expect((await h.api('GET', `/v1/sessions/${started.body.sessionId}`)).body.state).toBe('running');

    // null: the operator's default again, which the workspace is over.
    const back = await h.api('PATCH', `/v1/tasks/${taskId}`, { diskQuotaBytes: null }, OPERATOR_TOKEN);
    expect(back.status).toBe(200);
    expect(back.body.limits).toMatchObject({ diskQuotaBytes: 8 * MIB, overDiskQuota: true });
    expect(await quotaOf(taskId)).toBeNull();
  });
});
