/**
 * `make start`'s guarded engine (client/launcher/engine-guard.ts): until the dev server listens inside its
 * namespace, its bridge accepts a connection and closes it, so the TLS front completes a client's
 * handshake and closes it too, which a client cannot tell from a refused certificate (two fresh starts in eight failed so on a busy machine). The launcher waits for the
 * engine to answer behind the front before any client connects.
 */
import http2 from 'node:http2';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { engineSockets, waitForEngineBehindFront } from '../client/launcher/engine-guard';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function socketFolder(): Promise<{ dataDir: string; grpc: string }> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tws-front-'));
  const sockets = engineSockets(dataDir);
  await mkdir(sockets.dir, { mode: 0o700, recursive: true });
  closers.push(
    () => rm(dataDir, { recursive: true, force: true }),
    () => rm(sockets.dir, { recursive: true, force: true }),
  );
  return { dataDir, grpc: sockets.grpc };
}

const listen = (server: net.Server, at: string) => new Promise<void>((resolve) => server.listen(at, () => resolve()));
const close = (server: net.Server) => new Promise<void>((resolve) => server.close(() => resolve()));

describe('waiting for the guarded engine behind its front', () => {
  it('waits while the bridge accepts and closes (nothing listens behind it), and ends once an HTTP/2 server answers', async () => {
    const { dataDir, grpc } = await socketFolder();
    let closedEarly = 0;
    const bridge = net.createServer((socket) => {
      closedEarly++;
      socket.destroy();
    });
    await listen(bridge, grpc);
    let serving = false;
    const waited = waitForEngineBehindFront(dataDir, () => false, 20_000);
    // The engine comes up once the bridge has closed a few connections.
    while (closedEarly < 3) await new Promise((r) => setTimeout(r, 20));
    await close(bridge);
    const engine = http2.createServer();
    await listen(engine, grpc);
    serving = true;
    closers.push(() => close(engine));
    await waited;
    expect(serving).toBe(true);
    expect(closedEarly).toBeGreaterThanOrEqual(3);
  });

  it('stops waiting when the engine process died, and at its deadline, each in one line', async () => {
    const { dataDir, grpc } = await socketFolder();
    const bridge = net.createServer((socket) => socket.destroy());
    await listen(bridge, grpc);
    closers.push(() => close(bridge));
    await expect(waitForEngineBehindFront(dataDir, () => true, 20_000)).rejects.toThrow(
      'the Temporal server exited during start-up',
    );
    await expect(waitForEngineBehindFront(dataDir, () => false, 500)).rejects.toThrow(
      'the Temporal dev server did not answer within 0.5 s of its start',
    );
  });
});
