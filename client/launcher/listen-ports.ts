/**
 * The ports `make start` listens on, tried before anything starts: a taken one ends the start with
 * one line that names the port and the variable that moves it, instead of a part that dies and is
 * restarted until start-up gives up.
 */
import { readFile } from 'node:fs/promises';
import net from 'node:net';

export interface ListenPort {
  port: number;
  host: string;
  /** Who listens there, in a person's words. */
  what: string;
  /** The environment variable that moves it. */
  variable: string;
}

/** The error code of listening there (EADDRINUSE, EACCES, …), or null when it can be listened on. */
function listenError(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(null)));
  });
}

/** What stands in the way of listening on these ports, as one line for a person; null when nothing does. */
export async function portProblem(ports: ListenPort[]): Promise<string | null> {
  for (const [i, p] of ports.entries()) {
    if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65535)
      return `${p.variable} is not a port number (${p.port}): set it to a free port from 1 to 65535`;
    const other = ports.slice(0, i).find((q) => q.port === p.port);
    if (other)
      return `port ${p.port} is asked for by both ${other.what} and ${p.what}: set ${other.variable} or ${p.variable} to another port`;
    const error = await listenError(p.host, p.port);
    if (error === 'EADDRINUSE')
      return `port ${p.port} (${p.what}) is already in use on ${p.host}: stop what listens there (another \`make start\`?) or set ${p.variable} to a free port`;
    if (error)
      return `port ${p.port} (${p.what}) cannot be listened on at ${p.host} (${error}): set ${p.variable} to another port`;
  }
  return null;
}

/**
 * `n` distinct loopback ports nothing listens on now (each held until all are found, so no two are
 * one). Taken below the kernel's ephemeral range: a port is chosen here and listened on by a
 * service seconds later (after PostgreSQL and Temporal start), and a port of that range is what
 * every outgoing connection of the machine takes meanwhile (a start failed "Address already in
 * use" that way). Port 0 (the kernel's pick) only where no room is left below that range.
 */
export async function freeLoopbackPorts(n: number): Promise<number[]> {
  const below = await ephemeralStart();
  const lowest = 10_000;
  const servers: net.Server[] = [];
  try {
    for (let attempts = 0; servers.length < n && attempts < 200; attempts++) {
      const port = below - lowest > 1000 ? lowest + Math.floor(Math.random() * (below - lowest)) : 0;
      const server = await listenOn(port);
      if (server && !servers.some((s) => (s.address() as net.AddressInfo).port === port)) servers.push(server);
      else server?.close();
    }
    while (servers.length < n) {
      const server = await listenOn(0);
      if (server) servers.push(server);
    }
    return servers.map((server) => (server.address() as net.AddressInfo).port);
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

/** The first port of the kernel's ephemeral range (Linux's default when unreadable). */
async function ephemeralStart(): Promise<number> {
  const text = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '32768');
  const first = Number(text.trim().split(/\s+/)[0]);
  return Number.isInteger(first) && first > 0 ? first : 32768;
}

/** A server listening on the loopback port, or null when it is taken. */
function listenOn(port: number): Promise<net.Server | null> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(null));
    server.listen({ host: '127.0.0.1', port }, () => resolve(server));
  });
}
