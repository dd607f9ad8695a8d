/**
 * Determinism guard: every history under test/histories replays against today's workflow bundle,
 * every workflow type the worker registers has at least one, and a history recorded right now
 * replays too. A nondeterministic change, or two copies of protobufjs ("type must be a Type"),
 * fails here before it ships.
 *
 * Fixtures are `<workflowType>-<case>.json`. Those ending `-at-<commit>` were recorded by the code
 * of that commit and are kept as they are: they prove older histories still replay. The others
 * are recorded from real scenarios (test/support/recorded-scenarios.ts) by `make record-histories`
 * (test/recording/record-histories.ts), which rewrites them; this file only replays.
 */
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { launchWorkflowId } from '../domain/workflow-ids';
import { waitForJob } from './support/cleanup';
import { harnessesPerTest } from './support/harness';
import { exportedWorkflowTypes, readFixtures } from './support/history-fixtures';
import { launch, taskWithSession } from './support/scenario';
import { killGroup } from './support/world';

const { harness } = harnessesPerTest();
const replayOptions = () => ({ workflowBundle: { codePath: inject('workflowBundlePath') } });

describe('workflow replay', () => {
  it('has a recorded history for every workflow type exported by workflows/index.ts', async () => {
    const recorded = new Set(readFixtures().map((f) => f.workflowType));
    const missing = (await exportedWorkflowTypes()).filter((type) => !recorded.has(type));
    expect(missing, `workflow types with no history under test/histories: ${missing.join(', ')}`).toEqual([]);
  });

  it("replays every recorded history under test/histories against today's bundle", async () => {
    const fixtures = readFixtures();
    const exported = new Set(await exportedWorkflowTypes());
    // A history of a workflow type the worker no longer registers would fail to replay in
    // production too: say so by name rather than as a replay error.
    expect(
      fixtures.filter((f) => !exported.has(f.workflowType)).map((f) => `${f.file}: ${f.workflowType}`),
      'histories of workflow types no longer exported',
    ).toEqual([]);
    expect(
      fixtures.filter((f) => !f.file.startsWith(`${f.workflowType}-`)).map((f) => `${f.file}: ${f.workflowType}`),
      'fixture names must begin with their workflow type',
    ).toEqual([]);

    const failures: string[] = [];
    let replayed = 0;
    for await (const result of Worker.runReplayHistories(
      replayOptions(),
      fixtures.map((f) => ({ workflowId: f.file, history: f.history })),
    )) {
      replayed++;
      if (result.error) failures.push(`${result.workflowId}: ${result.error.name}: ${result.error.message}`);
    }
    expect(failures).toEqual([]);
    expect(replayed).toBe(fixtures.length);
  });

  it('replays a launch and an archive recorded now', async () => {
    const h = await harness();
    const t = await taskWithSession(h, 'now');
    const attached = await launch(h, t.taskId);
    expect(attached.status).toBe(201);
    for (const id of [t.session.sessionId, attached.body.sessionId])
      killGroup((await h.api('GET', `/v1/sessions/${id}`)).body.execution.pid);
    const archived = await h.api('POST', `/v1/tasks/${t.taskId}/archive`, {});
    expect(archived.status).toBe(202);
    await waitForJob(h, archived.body.operationId);
    for (const workflowId of [
      launchWorkflowId(t.session.sessionId),
      launchWorkflowId(attached.body.sessionId),
      archived.body.workflowId,
    ]) {
      await Worker.runReplayHistory(
        replayOptions(),
        await h.temporal.workflow.getHandle(workflowId).fetchHistory(),
        workflowId,
      );
    }
  });
});
