/**
 * A gateway checks the agents' sandbox and control groups only where it starts agents: with
 * TWS_GATEWAY_RUNS_LAUNCHES=0 (docker-compose.yml's gateway, in a container with neither) it
 * starts and is ready; running launches, the same machine's missing control groups stop it, as
 * they stop a worker. The missing groups are configuration: a TWS_CGROUP_PARENT no hierarchy can hold.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './support/harness';

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

// A folder below a control file: mkdir there fails in every hierarchy (ENOTDIR), v1 and v2 alike.
const NO_CGROUPS = { TWS_CGROUP_PARENT: 'cgroup.procs/task-workspaces', TWS_AGENT_LIMITS: 'on' };

describe('the agent checks of a gateway at start-up', () => {
  it('a gateway that runs no launch starts without the control groups, and says what the workers give', async () => {
    const gateway = await h.spawnGateway({ ...NO_CGROUPS, TWS_GATEWAY_RUNS_LAUNCHES: '0' });
    const ready = await gateway.api('GET', '/readyz', undefined, null);
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({
      status: 'ready',
      agentIsolation: h.config.agentSandbox === 'none' ? 'none' : 'bwrap',
    });
    gateway.child.kill('SIGTERM');
  });

  it('a gateway that runs launches refuses to start without them, in one line', async () => {
    const stderr = path.join(h.scratch, 'gateway-stderr.txt');
    await expect(h.spawnGateway({ ...NO_CGROUPS, TWS_GATEWAY_RUNS_LAUNCHES: '1' }, stderr)).rejects.toThrow(
      /the gateway exited \(1\)/,
    );
    expect(readFileSync(stderr, 'utf8')).toContain('agents cannot be limited here');
  });
});
