/**
 * Determinism guard: recorded launch histories under test/histories replay against today's
 * workflow code, and so does a history recorded right now. A nondeterministic change, or two
 * copies of protobufjs ("type must be a Type"), fails here before it ships.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { launchWorkflowId } from '../domain/workflow-ids';
import { waitForJob } from './support/cleanup';
import { createHarness, type Harness } from './support/harness';
import { createTask, launch, registerRepo } from './support/scenario';
import { killGroup, makeRepo } from './support/world';

const historiesDir = path.join(__dirname, 'histories');
let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const replayOptions = () => ({ workflowBundle: { codePath: inject('workflowBundlePath') } });

describe('workflow replay', () => {
  it('replays a launch recorded now (materialize, attach and refusal paths)', async () => {
    const repo = makeRepo(h.scratch, 'replay');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'replay')]);
    const first = await launch(h, taskId);
    const second = await launch(h, taskId);
    const other = await createTask(h, [await registerRepo(h, makeRepo(h.scratch, 'replay-gone'), 'replay-gone')]);
    const { rmSync } = await import('node:fs');
    rmSync(path.join(h.scratch, 'replay-gone'), { recursive: true });
    const failed = await launch(h, other);
    expect([first.status, second.status, failed.status]).toEqual([201, 201, 409]);
    for (const r of [first, second]) killGroup((await h.api('GET', `/v1/sessions/${r.body.sessionId}`)).body.execution.pid);

    const ids = [first.body.sessionId, second.body.sessionId];
    const failedSession = (await h.pool.query('SELECT id FROM sessions WHERE task_id = $1', [other])).rows[0].id;
    const archived = await h.api('POST', `/v1/tasks/${taskId}/archive`, {});
    expect(archived.status).toBe(202);
    await waitForJob(h, archived.body.operationId);
    const named: Record<string, string> = {
      'launch-materialized': launchWorkflowId(ids[0]),
      'launch-attached': launchWorkflowId(ids[1]),
      'launch-materialization-failed': launchWorkflowId(failedSession),
      'cleanup-archive': archived.body.workflowId,
    };
    for (const [name, workflowId] of Object.entries(named)) {
      const history = await h.temporal.workflow.getHandle(workflowId).fetchHistory();
      await Worker.runReplayHistory(replayOptions(), history, workflowId);
      if (process.env.TWS_RECORD_HISTORIES === '1') writeFileSync(path.join(historiesDir, `${name}.json`), historyToJSON(history));
    }
  });

  it('replays every recorded history under test/histories', async () => {
    const files = readdirSync(historiesDir).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(4);
    for (const file of files) {
      const history = JSON.parse(readFileSync(path.join(historiesDir, file), 'utf8'));
      await Worker.runReplayHistory(replayOptions(), history, file);
    }
  });
});
