/**
 * The tests' own check of who listens on a port (test/support/listeners.ts), on real sockets: the
 * process holding the listening socket is found, another is not, and a closed port is free.
 */
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { listensOn, portTaken } from './support/listeners';

describe('who listens on a port', () => {
  it('finds the process that holds the listening socket, and no other; a closed port is free', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      expect(portTaken(port)).toBe(true);
      expect(listensOn(process.pid, port)).toBe(true);
      expect(listensOn(process.ppid, port)).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    expect(portTaken(port)).toBe(false);
    expect(listensOn(process.pid, port)).toBe(false);
  });
});
