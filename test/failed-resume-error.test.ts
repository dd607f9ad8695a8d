/**
 * A failed resume's session says why, as a failed first launch does: a resume
 * that has to materialize the workspace again and cannot (git refuses) leaves its session
 * `failed`, and the session's view carries the error of the run that admitted it.
 */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { archive, waitForJob } from './support/cleanup';
import { harnessesPerTest } from './support/harness';
import { createTask, launch, registerRepo } from './support/scenario';
import { clearGitFault, gitWrapper, makeRepo } from './support/world';

const { harness, scratch } = harnessesPerTest();

describe('a failed resume', () => {
  it("its session reads failed with the run's error, code and message", async () => {
    const dir = await scratch();
    const wrapper = gitWrapper(dir, { failSubcommand: 'worktree add', failTimes: 1000 });
    clearGitFault(wrapper);
    const h = await harness({ gitBinary: wrapper });
    const repo = makeRepo(h.scratch, 'refusing');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'refusing')]);
    const first = await launch(h, taskId);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect((await h.api('POST', `/v1/sessions/${first.body.sessionId}/stop`)).status).toBe(200);
    await waitForJob(h, (await archive(h, taskId)).operationId);
    expect((await h.api('POST', `/v1/tasks/${taskId}/unarchive`)).status).toBe(200);
    // From now on git refuses every worktree add: the resume cannot make the workspace again.
    writeFileSync(`${wrapper}.count`, '0');
    const resumed = await h.api('POST', `/v1/sessions/${first.body.sessionId}/resume`, {});
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(409);
    expect(resumed.body.error.code).toBe('workspace_materialization_failed');
    const session = (await h.api('GET', `/v1/sessions/${first.body.sessionId}`)).body;
    expect(session).toMatchObject({ state: 'failed', error: { code: 'workspace_materialization_failed' } });
    expect(typeof session.error.message).toBe('string');
  });
});
