/**
 * A typed refusal is an outcome the caller is told, not a fault: in the services' log (the worker's
 * and the gateway's, stdout and stderr, as `make start` keeps them) it is one line with its code
 * and its run's ids, never a stack. An internal error keeps its stack and its error id.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { harnessesPerTest, OPERATOR_TOKEN } from './support/harness';
import { expectSafeError, waitUntil } from './support/scenario';
import { makeRepo } from './support/world';

const { harness, cleanups } = harnessesPerTest();

const linesOf = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim());

describe("a refusal in the services' log", () => {
  it('a delete refused for uncommitted work writes one line with its code and ids, and no stack [R7]', async () => {
    const h = await harness({}, { inProcessWorker: false });
    const workerLog = path.join(h.scratch, 'worker.log');
    const gatewayLog = path.join(h.scratch, 'gateway.log');
    writeFileSync(workerLog, '');
    writeFileSync(gatewayLog, '');
    const worker = h.spawnWorker({}, workerLog);
    cleanups.push(() => void worker.kill('SIGKILL'));
    const gateway = await h.spawnGateway({}, gatewayLog, gatewayLog);
    const repo = makeRepo(h.scratch, 'refused');
    const registered = await gateway.api('POST', '/v1/repositories', { name: 'refused', path: repo });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const task = await gateway.api('POST', '/v1/tasks', {
      title: 'dirty',
      repositories: [{ repositoryId: registered.body.id }],
    });
    expect(task.status, JSON.stringify(task.body)).toBe(201);
    const taskId = task.body.id as string;
    const launched = await gateway.api('POST', `/v1/tasks/${taskId}/sessions`, {
      executorType: 'worktree',
      agentProfile: 'shell',
      command: ['sh', '-c', 'echo work > uncommitted.txt'],
    });
    expect(launched.status, JSON.stringify(launched.body)).toBe(201);
    await waitUntil(
      async () => (await gateway.api('GET', `/v1/sessions/${launched.body.sessionId}`)).body.execution?.endedAt != null,
      'the agent to end',
    );

    const refused = await gateway.api('DELETE', `/v1/tasks/${taskId}`, undefined, OPERATOR_TOKEN);
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expectSafeError(refused.body, 'task_delete_dirty_worktree', [repo]);

    // The refusal's line is written as its run ends, before the answer; a moment for the pipes.
    const logs = () => [...linesOf(workerLog), ...linesOf(gatewayLog)];
    await waitUntil(
      async () => logs().some((l) => l.includes('task_delete_dirty_worktree')),
      'the refusal logged',
      10_000,
      async () => logs(),
    );
    await new Promise((r) => setTimeout(r, 1000));
    const all = logs();
    const said = all.filter((l) => l.includes('task_delete_dirty_worktree') || l.includes('uncommitted changes'));
    expect(said, all.join('\n')).toHaveLength(1);
    expect(said[0]).toMatch(/refused task_delete_dirty_worktree: workflowType=\w+ workflowId=\S+/);
    expect(said[0]).toContain(taskId);
    // No stack, no failure dump: no frame, no ApplicationFailure, no path of the repository.
    expect(
      all.filter((l) => /^\s+at |ApplicationFailure|stackTrace/.test(l)),
      all.join('\n'),
    ).toEqual([]);
    expect(all.join('\n')).not.toContain(repo);
  });
});
