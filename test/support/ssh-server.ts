/**
 * A real OpenSSH sshd on 127.0.0.1 for the SSH transport's tests: its own host key, a user key
 * it accepts for the current user, and a temporary folder for remote workspaces. `stop()` kills
 * it and every session it forked (a target that went down), `start()` brings it back on the same
 * port with the same keys. The binary is the system's or the one `make setup` unpacked.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** This server as the service knows a target: the fields of `POST /v1/ssh-targets` (with a name) and of the ssh/ helpers' SshTarget (with an id). */
export function targetFields(ssh: SshServer) {
  return {
    host: ssh.host,
    port: ssh.port,
    user: ssh.user,
    privateKeyPath: ssh.privateKeyPath,
    knownHosts: ssh.knownHostsLine,
    workspaceRoot: ssh.workspaceRoot,
  };
}

export interface SshServer {
  host: '127.0.0.1';
  port: number;
  user: string;
  privateKeyPath: string;
  /** `[127.0.0.1]:PORT ssh-ed25519 AAAA…`: the server's own key, as a known_hosts line. */
  knownHostsLine: string;
  /** A fresh temporary folder for remote workspaces. */
  workspaceRoot: string;
  /** Kills sshd and every session it forked: the target is down. */
  stop(): Promise<void>;
  /** Starts it again on the same port with the same keys. */
  start(): Promise<void>;
  /** A known_hosts line for this host and port with a different, freshly generated key. */
  otherHostKnownHostsLine(): Promise<string>;
  /**
   * The machine got a new host key (reinstalled, rebuilt): sshd restarted with a freshly generated
   * one; `knownHostsLine` is the new line from then on, and the old one pins nothing any more.
   */
  changeHostKey(): Promise<string>;
  /** Stops it and removes its folders. */
  remove(): Promise<void>;
}

export function sshdBinary(): string {
  for (const candidate of ['/usr/sbin/sshd', path.resolve('.tools/openssh/usr/sbin/sshd')])
    if (existsSync(candidate)) return candidate;
  throw new Error(
    "No sshd found (neither /usr/sbin/sshd nor .tools/openssh/usr/sbin/sshd): run `make setup`, which unpacks Debian's openssh-server into .tools/openssh/",
  );
}

async function keygen(file: string): Promise<void> {
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', '', '-f', file]);
}

/** `[127.0.0.1]:PORT type base64` for a public key file. */
async function knownHostsLineOf(pubFile: string, port: number): Promise<string> {
  const [type, key] = (await readFile(pubFile, 'utf8')).trim().split(/\s+/);
  return `[127.0.0.1]:${port} ${type} ${key}`;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The pids of a process's descendants, read from /proc (sshd's sessions call setsid, so no process group holds them). */
function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parentOf.set(Number(entry), ppid);
    } catch {
      // exited meanwhile
    }
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [child, ppid] of parentOf)
      if (ppid === parent && !found.includes(child)) (found.push(child), queue.push(child));
  }
  return found;
}

export async function startSshServer(): Promise<SshServer> {
  const binary = sshdBinary();
  // As root, sshd needs its privilege-separation directory; it lives on a tmpfs that a reboot empties.
  if (process.getuid?.() === 0) await mkdir('/run/sshd', { recursive: true, mode: 0o755 });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tws-sshd-'));
  const workspaceRoot = await mkdtemp(path.join(os.tmpdir(), 'tws-ssh-workspaces-'));
  const hostKey = path.join(dir, 'host_ed25519');
  const userKey = path.join(dir, 'user_ed25519');
  await Promise.all([keygen(hostKey), keygen(userKey)]);
  const authorizedKeys = path.join(dir, 'authorized_keys');
  await writeFile(authorizedKeys, await readFile(`${userKey}.pub`), { mode: 0o600 });
  const port = await freePort();
  // The sessions' HOME is an empty folder of this server's: bash started by sshd reads ~/.bashrc
  // even for a command, and this machine's (root's) runs `pyenv init`, about 0.4 s a command,
  // which once left a stale lock behind a session killed mid-way (a target stopped by a test) and
  // then hung every command after it. A target's own login files are not what the tests measure.
  const home = path.join(dir, 'home');
  await mkdir(home, { mode: 0o700 });
  const config = path.join(dir, 'sshd_config');
  await writeFile(
    config,
    [
      'ListenAddress 127.0.0.1',
      `Port ${port}`,
      `HostKey ${hostKey}`,
      `PidFile ${path.join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${authorizedKeys}`,
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      'PermitRootLogin prohibit-password',
      'MaxSessions 20',
      'MaxStartups 50',
      `SetEnv HOME=${home}`,
      'LogLevel ERROR',
      '',
    ].join('\n'),
  );
  const knownHostsLine = await knownHostsLineOf(`${hostKey}.pub`, port);

  let child: ChildProcess | null = null;
  let stderr = '';
  const start = async () => {
    if (child) return;
    stderr = '';
    const started = spawn(binary, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    started.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    let exited = false;
    started.once('exit', () => (exited = true));
    child = started;
    for (let i = 0; i < 200; i++) {
      if (exited) break;
      if (await accepts(port)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    child = null;
    started.kill('SIGKILL');
    throw new Error(`sshd did not start on port ${port}: ${stderr.trim()}`);
  };
  const stop = async () => {
    const running = child;
    if (!running?.pid) return;
    child = null;
    const sessions = descendants(running.pid);
    const gone = new Promise((r) =>
      running.exitCode !== null || running.signalCode !== null ? r(null) : running.once('exit', r),
    );
    running.kill('SIGKILL');
    for (const pid of sessions) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // ended on its own
      }
    }
    await gone;
  };
  await start();
  const server: SshServer = {
    host: '127.0.0.1',
    port,
    user: os.userInfo().username,
    privateKeyPath: userKey,
    knownHostsLine,
    workspaceRoot,
    start,
    stop,
    async changeHostKey() {
      await stop();
      await rm(hostKey, { force: true });
      await rm(`${hostKey}.pub`, { force: true });
      await keygen(hostKey);
      await start();
      server.knownHostsLine = await knownHostsLineOf(`${hostKey}.pub`, port);
      return server.knownHostsLine;
    },
    async otherHostKnownHostsLine() {
      const other = path.join(await mkdtemp(path.join(dir, 'other-')), 'host_ed25519');
      await keygen(other);
      return knownHostsLineOf(`${other}.pub`, port);
    },
    async remove() {
      await stop();
      await Promise.all([
        rm(dir, { recursive: true, force: true }),
        rm(workspaceRoot, { recursive: true, force: true }),
      ]);
    },
  };
  return server;
}
