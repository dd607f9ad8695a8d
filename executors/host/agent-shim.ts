/**
 * The agent's supervising parent (issue 11), as container shims keep a container's exit code for
 * a daemon that restarts: a small node process, detached in its own process group, that runs the
 * agent as its child and, when the agent ends, writes how (exit code or signal) to a status file
 * beside the log, durably (write, fsync, rename). It outlives the worker, so an exit while no
 * worker runs is still known afterwards, not guessed. It ignores the group's SIGTERM/SIGINT/SIGHUP
 * (the agent, in the same group, gets them) so that it lives to record the outcome.
 */
import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { SANDBOX_BLOCK_FD, SANDBOX_INFO_FD } from '../../domain/sandbox';

/**
 * Run by `node -e` with argv [statusFile, logFile, maxLogBytes, sandboxed, command, ...args]; plain
 * JavaScript, no imports of ours. `sandboxed` is 0 (no sandbox), 1 (bubblewrap) or `egress:<binary>`
 * (bubblewrap in a network namespace of its own, given user-mode egress by slirp4netns, issue 33:
 * bubblewrap names its child on fd 3 and waits on fd 4; slirp4netns is started on that child's
 * namespace without the host's loopback, says it is ready on its fd 3 and ends when its fd 4
 * closes, that is with this shim; the agent starts only then. Should it fail, the agent runs with
 * no network at all, and the log says so). Otherwise plain
 * JavaScript, no imports of ours. The agent's output goes through it into the log, which it keeps
 * within maxLogBytes on disk: past half of it, the log becomes `<log>.1` (the one before is
 * dropped) and a new log begins, so the newest output is always kept.
 */
export const SHIM_SOURCE = `
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const [statusFile, logFile, maxBytesArg, sandboxed, command, ...args] = process.argv.slice(1);
const half = Math.max(4096, Math.floor(Number(maxBytesArg) / 2));
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => {});
const { TWS_EXECUTION_ID, ...env } = process.env;
let log = fs.openSync(logFile, 'a');
let size = fs.fstatSync(log).size;
function write(chunk) {
  if (size + chunk.length > half && size > 0) {
    fs.closeSync(log);
    fs.renameSync(logFile, logFile + '.1');
    log = fs.openSync(logFile, 'a');
    size = 0;
  }
  fs.writeSync(log, chunk);
  size += chunk.length;
}
let written = false;
let exitStatus = null;
let open = 2;
function record(outcome) {
  if (written) return;
  written = true;
  const tmp = statusFile + '.tmp';
  const fd = fs.openSync(tmp, 'w', 0o600);
  fs.writeSync(fd, JSON.stringify({ ...outcome, endedAt: new Date().toISOString() }));
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  fs.renameSync(tmp, statusFile);
  process.exit(0);
}
const egress = sandboxed.startsWith('egress:') ? sandboxed.slice('egress:'.length) : null;
// For egress, descriptors ${SANDBOX_INFO_FD} and ${SANDBOX_BLOCK_FD} of bubblewrap are pipes of this shim (domain/sandbox.ts).
const child = spawn(command, args, { stdio: egress ? ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'], env });
if (egress) {
  let info = '';
  let network = null;
  const release = (note) => {
    if (note) write(Buffer.from('task-workspaces: ' + note + '\\n'));
    child.stdio[${SANDBOX_BLOCK_FD}].end('1');
  };
  child.stdio[${SANDBOX_BLOCK_FD}].on('error', () => {});
  child.stdio[${SANDBOX_INFO_FD}].on('data', (data) => {
    info += data;
    const found = /"child-pid"\\s*:\\s*(\\d+)/.exec(info);
    if (!found || network) return;
    network = 'waiting';
    // bubblewrap names its child before the child sets up its loopback, and slirp4netns brings the
    // loopback up too: started at once, the two race and bubblewrap fails. So it starts once the
    // loopback is up (its broadcast route is in the namespace's table), or after 5 s in any case.
    const until = Date.now() + 5000;
    const poll = () => {
      let up = false;
      try { up = fs.readFileSync('/proc/' + found[1] + '/net/fib_trie', 'utf8').includes('127.255.255.255'); } catch {}
      if (up || Date.now() > until) startNetwork(found[1]); else setTimeout(poll, 5);
    };
    poll();
  });
  function startNetwork(pid) {
    network = spawn(egress, ['--configure', '--mtu=65520', '--disable-host-loopback', '--ready-fd=3', '--exit-fd=4', pid, 'tap0'], { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] });
    let ready = false;
    network.stdio[3].once('data', () => { ready = true; release(null); });
    network.on('error', () => { if (!ready) { ready = true; release('the sandbox network could not start: the agent has no network'); } });
    network.on('exit', () => { if (!ready) { ready = true; release('the sandbox network could not start: the agent has no network'); } });
  }
}
const drained = () => { if (--open === 0 && exitStatus) record(exitStatus); };
for (const stream of [child.stdout, child.stderr]) {
  stream.on('data', write);
  stream.on('end', drained);
}
child.on('error', (err) => record({ exitCode: 127, signal: null, error: String(err.code || 'spawn_failed') }));
// Bubblewrap ends with 128 + N for a child ended by signal N: read back as that signal.
const signalNames = Object.fromEntries(Object.entries(require('node:os').constants.signals).map(([name, n]) => [n, name]));
child.on('exit', (exitCode, signal) => {
  exitStatus = sandboxed !== '0' && exitCode > 128 && signalNames[exitCode - 128] ? { exitCode: null, signal: signalNames[exitCode - 128] } : { exitCode, signal };
  if (open === 0) record(exitStatus);
  // Output of the agent's own children may hold the pipes open: the outcome is not held back for long.
  setTimeout(() => record(exitStatus), 1000).unref();
});
`;

/** The shim's `sandboxed` argument: no sandbox, bubblewrap, or bubblewrap whose network the shim starts with this binary. */
export const shimSandboxArgument = (network: { egressBinary: string | null } | null): string =>
  !network ? '0' : network.egressBinary ? `egress:${network.egressBinary}` : '1';

/** Node flags of the shim: it holds one child and a few bytes, so a small heap will do. */
export const SHIM_NODE_FLAGS = ['--max-old-space-size=16', '--max-semi-space-size=1'];

export interface ExitStatus {
  exitCode: number | null;
  signal: string | null;
  endedAt: string;
}

/** The status file of an execution: beside its log. */
export const exitStatusPath = (logPath: string): string => logPath.replace(/\.log$/, '') + '.exit';

/** The recorded outcome, or null when the shim wrote none (it was killed, or the agent still runs). */
export async function readExitStatus(logPath: string): Promise<ExitStatus | null> {
  try {
    const parsed = JSON.parse(await readFile(exitStatusPath(logPath), 'utf8')) as Partial<ExitStatus>;
    return {
      exitCode: typeof parsed.exitCode === 'number' ? parsed.exitCode : null,
      signal: typeof parsed.signal === 'string' ? parsed.signal : null,
      endedAt: String(parsed.endedAt),
    };
  } catch {
    return null;
  }
}

/**
 * Whether the command can be started as the system would (execvp): a path with a slash is taken
 * relative to the working directory, a bare name is searched on PATH. Checked before the spawn,
 * so a command that cannot start is refused (400) before anything runs, as it was without a shim.
 */
export async function commandStartable(command: string, cwd: string, pathVar: string | undefined): Promise<boolean> {
  const executable = async (file: string) =>
    access(file, constants.X_OK).then(
      () => true,
      () => false,
    );
  if (command.includes('/')) return executable(path.resolve(cwd, command));
  for (const dir of (pathVar ?? '').split(':').filter(Boolean))
    if (await executable(path.join(dir, command))) return true;
  return false;
}
