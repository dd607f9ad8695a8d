/**
 * Who listens on a local port, read from /proc: a test that picked a free port and started a
 * server on it makes sure the server it then talks to is the one it started, not another
 * process that took the port meanwhile (under load, two tests' servers met on one port, and a
 * test sent its requests to another test's gateway).
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** The inodes of the sockets listening on `port` (any local address). */
function listeningInodes(port: number): Set<string> {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue; // no IPv6 table on this host
    }
    for (const line of text.split('\n').slice(1)) {
      const columns = line.trim().split(/\s+/);
      // local address, remote address, state (0A: LISTEN), ..., inode (the tenth column)
      if (columns.length > 9 && columns[1]!.endsWith(hex) && columns[3] === '0A') inodes.add(columns[9]!);
    }
  }
  return inodes;
}

/** Whether process `pid` holds a socket listening on `port`. */
export function listensOn(pid: number, port: number): boolean {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return false;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false; // it ended
  }
  return fds.some((fd) => {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      return match !== null && inodes.has(match[1]!);
    } catch {
      return false; // closed meanwhile
    }
  });
}

/** Whether some process listens on `port`. */
export const portTaken = (port: number): boolean => listeningInodes(port).size > 0;
