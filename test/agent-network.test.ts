/**
 * Agents reach none of the service's ports. From inside a sandboxed agent, a TCP
 * connection to each port the service listens on here (the API, which also serves /metrics,
 * Temporal, PostgreSQL, and any other listener on the host's loopback, such as another agent's or
 * the Temporal UI) fails under `egress` and `none`; under `egress` a listener on another address of
 * this machine's own network namespace (these machines reach no internet) still answers, which is
 * how egress is proved; `none` reaches nothing; `host` is the old behaviour and reaches them all.
 */
import net from 'node:net';
import os from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { agentIsolation } from '../executors/host/agent-sandbox';
import { harnessesPerTest } from './support/harness';
import { agentOutputUntil, createTask, launch, registerRepo } from './support/scenario';
import { makeRepo } from './support/world';

const { harness } = harnessesPerTest();

/** This machine's first non-loopback IPv4 address: the stand-in for an address outside the host. */
const outsideAddress = Object.values(os.networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

const listeners: net.Server[] = [];
afterAll(() => listeners.forEach((l) => l.close()));
async function listener(host: string): Promise<number> {
  // A connection is all the probe asks for; its end (the probe closes at once) is no error here.
  const server = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.destroy();
  });
  listeners.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as net.AddressInfo).port;
}

const portOf = (url: string): number => Number(new URL(url).port);

/** Runs a probe agent under `policy` and returns, per target name, whether it connected. */
async function probe(
  policy: 'egress' | 'none' | 'host',
  targets: Record<string, [string, number]>,
): Promise<{ results: Record<string, boolean>; readyNetwork: string }> {
  const h = await harness({ agentNetwork: policy });
  expect(await agentIsolation(h.config.agentSandbox)).toBe('bwrap');
  const all: Record<string, [string, number]> = {
    api: ['127.0.0.1', portOf(h.baseUrl)],
    temporal: ['127.0.0.1', Number(h.config.temporalAddress.split(':').pop())],
    postgres: ['127.0.0.1', portOf(h.databaseUrl)],
    ...targets,
  };
  const code = [
    'import socket',
    ...Object.entries(all).map(
      ([name, [host, port]]) =>
        `try:\n  socket.create_connection(("${host}", ${port}), timeout=3).close(); print("${name}: connected")\nexcept Exception as e:\n  print("${name}: failed", type(e).__name__)`,
    ),
    'print("done")',
  ].join('\n');
  const repo = makeRepo(h.scratch, `net-${policy}`);
  const taskId = await createTask(h, [await registerRepo(h, repo, `net-${policy}`)]);
  const res = await launch(h, taskId, { command: ['python3', '-c', code] });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const out = await agentOutputUntil(h, res.body.executionId, 'done');
  const results: Record<string, boolean> = {};
  for (const name of Object.keys(all)) {
    const line = new RegExp(`^${name}: (connected|failed)`, 'm').exec(out);
    expect(line, `${name} in ${out}`).not.toBeNull();
    results[name] = line![1] === 'connected';
  }
  const ready = await h.api('GET', '/readyz', undefined, null);
  return { results, readyNetwork: ready.body.agentNetwork };
}

describe('agents reach none of the service ports', () => {
  it('egress (the default): every port on the host loopback fails, an address outside still answers', async () => {
    expect(outsideAddress, 'a non-loopback address of this machine').toBeTruthy();
    const targets: Record<string, [string, number]> = {
      'loopback listener': ['127.0.0.1', await listener('127.0.0.1')],
      outside: [outsideAddress!, await listener(outsideAddress!)],
    };
    const { results, readyNetwork } = await probe('egress', targets);
    expect(readyNetwork).toBe('egress');
    expect(results).toEqual({
      api: false,
      temporal: false,
      postgres: false,
      'loopback listener': false,
      outside: true,
    });
  });

  it('none: nothing is in reach, not even an address outside', async () => {
    const targets: Record<string, [string, number]> = {
      'loopback listener': ['127.0.0.1', await listener('127.0.0.1')],
      outside: [outsideAddress!, await listener(outsideAddress!)],
    };
    const { results, readyNetwork } = await probe('none', targets);
    expect(readyNetwork).toBe('none');
    expect(results).toEqual({
      api: false,
      temporal: false,
      postgres: false,
      'loopback listener': false,
      outside: false,
    });
  });

  it('host: the old behaviour, every port of the host in reach (what the README warns of)', async () => {
    const targets: Record<string, [string, number]> = {
      'loopback listener': ['127.0.0.1', await listener('127.0.0.1')],
    };
    const { results, readyNetwork } = await probe('host', targets);
    expect(readyNetwork).toBe('host');
    expect(results).toEqual({ api: true, temporal: true, postgres: true, 'loopback listener': true });
  });
});
