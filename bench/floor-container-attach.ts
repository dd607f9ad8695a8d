/**
 * The floor of a container attach (bench/floor.ts's containerAttach): the attach's statements,
 * the same read-only validation (the workspace is the worktree executor's, on the host), the
 * container's row, then the engine's own way to run a command in a running container, `podman
 * exec -d`, as a plain process. Its own file because it reaches the agent through the engine, not
 * through the host's process starter.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import type pg from 'pg';
import { findContainer } from '../db/containers';
import { insertExecution } from '../db/executions';
import { moveSessionState } from '../db/sessions';
import type { Config } from '../domain/config';
import { processStartTime } from '../executors/host/process-identity';
import { AGENT_COMMAND } from './api';
import { admit, inOneTransaction, launchRequest, validate, type FloorPhases } from './floor-steps';

const execFileAsync = promisify(execFile);

/** What the floor needs of a container besides its row: fixed while it runs, so read once. */
interface ContainerFacts {
  /** `<uid>:<uid>`, as the product made it (its Config.User). */
  user: string;
  initPid: number;
  initStartTime: string;
}

/** An attach of a container workspace, in one transaction; see Floor.containerAttach. */
export function containerAttachFloor(
  pool: pg.Pool,
  config: Config,
  productWorkspaceRoot: string,
): (taskId: string) => Promise<FloorPhases> {
  const known = new Map<string, ContainerFacts>();
  const factsOf = async (containerId: string): Promise<ContainerFacts> => {
    let facts = known.get(containerId);
    if (!facts) {
      const { stdout } = await execFileAsync('podman', [
        'inspect',
        '--format',
        '{{.Config.User}} {{.State.Pid}}',
        containerId,
      ]);
      const [user, pid] = stdout.trim().split(' ');
      const initPid = Number(pid);
      const initStartTime = await processStartTime(initPid);
      if (!user || !initPid || !initStartTime) throw new Error('floor: container not running');
      facts = { user, initPid, initStartTime };
      known.set(containerId, facts);
    }
    return facts;
  };

  return (taskId) =>
    inOneTransaction(pool, async (client, part) => {
      const plan = await part('sql', () =>
        admit(client, { ...launchRequest(taskId), executorType: 'container' }, productWorkspaceRoot, 'attached'),
      );
      await part('git', () => validate(plan));
      const container = await part('sql', () => findContainer(client, plan.environmentId));
      if (!container || container.host_id !== config.hostId) throw new Error('floor: no container on this host');
      const facts = await part('podman inspect', () => factsOf(container.container_id));
      await part('podman exec', () =>
        execFileAsync('podman', [
          'exec',
          '-d',
          '--user',
          facts.user,
          '--workdir',
          plan.workspacePath,
          container.container_id,
          ...AGENT_COMMAND,
        ]),
      );
      await part('sql', async () => {
        // `podman exec -d` answers with its exec session, not the agent's pid (asking for that is
        // another engine call the product does not make). The row names the container's first
        // process instead, a real one with its start time, as `stopped`: nothing ever stops or
        // kills by it (the benchmark's killAgents and the worker's exit check read `running`
        // rows only); the agent ends with its container at the end of the scenario.
        await insertExecution(client, {
          id: randomUUID(),
          session_id: plan.sessionId,
          host_id: config.hostId,
          pid: facts.initPid,
          process_start_time: facts.initStartTime,
          cwd: plan.workspacePath,
          // Its output is the engine's (conmon's), not a file of this host's.
          log_path: '/dev/null',
          status: 'stopped',
        });
        if (!(await moveSessionState(client, plan.sessionId, ['starting'], 'running')))
          throw new Error('floor: session did not move to running');
      });
    });
}
