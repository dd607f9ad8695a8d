/**
 * The agent supervisor as it was before the C one: a `node -e` program, replaced by
 * native/agent-supervisor.c. Kept here, word for word, only so that bench/supervisor-cost.ts can
 * measure what the change saved; nothing of the product runs it.
 */
import { SANDBOX_BLOCK_FD, SANDBOX_INFO_FD } from '../domain/sandbox';

/** Run by `node -e` with argv [statusFile, logFile, maxLogBytes, sandboxed, command, ...args]. */
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

/** Node flags it ran with: it holds one child and a few bytes, so a small heap will do. */
export const SHIM_NODE_FLAGS = ['--max-old-space-size=16', '--max-semi-space-size=1'];
