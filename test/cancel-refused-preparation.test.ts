/**
 * A cancel sent to a cleanup whose preparation is refused answers at once: a
 * delete of a dirty task without consent is refused while an operator's cancel (the Temporal UI,
 * the CLI, an unarchive) is waiting on it; the cancel says `refused` and the run ends, instead of
 * waiting forever for a job that was never prepared.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cancelUpdate } from '../workflows/cleanup-messages';
import { harnessesPerTest } from './support/harness';
import { deleteTask } from './support/cleanup';
import { createTask, launch, registerRepo, waitUntil } from './support/scenario';
import { makeRepo } from './support/world';
import { worktreePath } from '../domain/task-layout';

const { harness, scratch } = harnessesPerTest();

describe('a cancel of a refused preparation', () => {
  it('answers `refused` within seconds, and the delete is refused with nothing changed', async () => {
    const dir = await scratch();
    // git status (the delete's dirty check) takes 3 s: the cancel arrives while it runs.
    const wrapper = path.join(dir, 'slow-status-git');
    writeFileSync(
      wrapper,
      '#!/usr/bin/env bash\nfor a in "$@"; do [ "$a" = status ] && sleep 3 && break; done\nexec git "$@"\n',
    );
    chmodSync(wrapper, 0o755);
    const h = await harness({ gitBinary: wrapper });
    const repo = makeRepo(h.scratch, 'dirty');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'dirty')]);
    expect((await launch(h, taskId)).status).toBe(201);
    writeFileSync(path.join(worktreePath(h.config.workspaceRoot, taskId, 'dirty'), 'wip.txt'), 'uncommitted\n');

    const deleting = deleteTask(h, taskId);
    let workflowId: string | undefined;
    await waitUntil(
      async () => {
        for await (const wf of h.temporal.workflow.list({
          query: `WorkflowId STARTS_WITH "cleanup/delete/${taskId}/"`,
        }))
          workflowId = wf.workflowId;
        return workflowId !== undefined;
      },
      'the delete run',
      20_000,
    );
    const started = Date.now();
    const answer = await h.temporal.workflow
      .getHandle(workflowId!)
      .executeUpdate<{ state: string }, [{ by: string }]>(cancelUpdate.name, { args: [{ by: 'operator' }] });
    expect(answer).toEqual({ state: 'refused' });
    expect(Date.now() - started).toBeLessThan(20_000);
    const refused = await deleting;
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error.code).toBe('task_delete_dirty_worktree');
    expect((await h.api('GET', `/v1/tasks/${taskId}`)).status).toBe(200);
  });
});
