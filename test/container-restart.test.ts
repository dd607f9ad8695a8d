/**
 * The container executor across a worker SIGKILL, and with `egress` networking: its agents are the
 * host supervisor's children, so a new worker finds them again (pid and start time), collects an
 * exit that came while no worker ran, and a resume starts the agent in the same container. With
 * user-mode egress the agent still reaches no port of the service on the host.
 */
import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  containerEngineSocket,
  containerSettings,
  engineForTests,
  removeHostContainers,
} from './support/container-engine';
import { harnessesPerTest } from './support/harness';
import { agentEnded, agentOutputUntil, createTask, launch, registerRepo, waitUntil } from './support/scenario';
import { makeRepo, processAlive } from './support/world';

const { harness, cleanups } = harnessesPerTest();

describe('the container executor across a restart', () => {
  it('a SIGKILLed worker: its agents run on in the container; the new worker records their ends and resumes in it', async () => {
    const socket = await containerEngineSocket();
    // Egress (the default policy), from the worker's own environment.
    const h = await harness({ containers: containerSettings(socket) }, { inProcessWorker: false });
    cleanups.push(() => removeHostContainers(h.config.hostId));
    const env = { TWS_CONTAINER_ENGINE: socket, TWS_CONTAINER_IMAGE: 'tws-agent:bookworm' };
    let worker: ChildProcess = h.spawnWorker(env);
    cleanups.push(() => void worker.kill('SIGKILL'));
    const repo = makeRepo(h.scratch, 'ctr-restart');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'ctr-restart')]);
    const port = new URL(h.baseUrl).port;
    const long = await launch(h, taskId, {
      executorType: 'container',
      command: [
        'sh',
        '-c',
        `git ls-remote http://127.0.0.1:${port}/x 2>&1 | head -1; git ls-remote http://10.0.2.2:${port}/x 2>&1 | head -1; echo ready; sleep 600`,
      ],
    });
    expect(long.status, JSON.stringify(long.body)).toBe(201);
    const out = await agentOutputUntil(h, long.body.executionId, 'ready');
    // Its own loopback, and the user-mode network's way to the host's loopback closed: no service port.
    const refused = out.split('\n').filter((l) => /unable to access/.test(l) && /connect|timed out/i.test(l));
    expect(refused, out).toHaveLength(2);
    const container = (
      await h.pool.query('SELECT container_id FROM environment_containers WHERE environment_id = $1', [
        long.body.taskEnvironmentId,
      ])
    ).rows[0].container_id;
    expect((await (await engineForTests()).getContainer(container).inspect()).HostConfig.NetworkMode).toBe(
      'slirp4netns',
    );
    const short = await launch(h, taskId, { executorType: 'container', command: ['sh', '-c', 'sleep 4; exit 7'] });
    expect(short.status, JSON.stringify(short.body)).toBe(201);
    const pid = (await h.api('GET', `/v1/sessions/${long.body.sessionId}`)).body.execution.pid;
    const shortPid = (await h.api('GET', `/v1/sessions/${short.body.sessionId}`)).body.execution.pid;

    worker.kill('SIGKILL');
    await new Promise((r) => worker.once('exit', r));
    expect(processAlive(pid)).toBe(true);
    // The short agent ends while no worker runs.
    await waitUntil(async () => !processAlive(shortPid), 'the short agent to end while no worker runs', 30_000);
    worker = h.spawnWorker(env);

    const ended = await agentEnded(h, short.body.sessionId);
    expect(ended.execution.exitCode).toBe(7);
    const running = await h.api('GET', `/v1/sessions/${long.body.sessionId}`);
    expect(running.body).toMatchObject({ state: 'running', execution: { pid, state: 'running' } });
    // A resume starts it again in the same container (the container is the environment's, not the worker's).
    const before = (
      await h.pool.query('SELECT container_id FROM environment_containers WHERE environment_id = $1', [
        long.body.taskEnvironmentId,
      ])
    ).rows[0].container_id;
    const resumed = await h.api('POST', `/v1/sessions/${long.body.sessionId}/resume`);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(resumed.body.execution.pid).not.toBe(pid);
    expect(processAlive(pid)).toBe(false);
    const after = (
      await h.pool.query('SELECT container_id FROM environment_containers WHERE environment_id = $1', [
        long.body.taskEnvironmentId,
      ])
    ).rows[0].container_id;
    expect(after).toBe(before);
  });
});
