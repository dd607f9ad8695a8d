/**
 * The helper's own side of the process starter (process-starter.ts): a separate program, plain
 * JavaScript run by `node -e`, and the events it writes back. Kept apart from the side that
 * drives it so the protocol both sides must agree on reads in one place.
 */

/** In the helper's command line: the benchmark counts its CPU (and its children's) with its parent's. */
export const STARTER_MARK = 'task-workspaces process starter';

/**
 * The exit code of a command that did not run to its end through the starter (it could not be
 * started, or the helper ended under it): non-zero, so simple-git reads a failure, and never 1,
 * which git gives as an answer (`rev-parse --verify --quiet`: no such ref).
 */
export const NOT_RUN_EXIT_CODE = 255;

/**
 * Run by `node -e`; plain JavaScript, no imports of ours. stdin carries requests, stdout events;
 * its stdin closing, or its stdout's reader gone (this process gone), ends it, and the children
 * it started are left to run their course (re-parented), as they would be if this process had
 * started them itself. Exported for its test.
 */
export const STARTER_SOURCE = `// ${STARTER_MARK}
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const children = new Map();
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
function start(m) {
  let fd = null;
  try {
    if (m.appendTo) fd = fs.openSync(m.appendTo, 'a');
    const out = fd === null ? (m.output === 'ignore' ? 'ignore' : 'pipe') : fd;
    const c = spawn(m.file, m.args, { cwd: m.cwd, env: m.env, detached: m.detached, stdio: ['ignore', out, out], windowsHide: true });
    children.set(m.id, c);
    // A detached child's start time (field 22 of its stat), read before this loop can reap it: an
    // agent that ends at once is identified all the same (its record needs pid and start time).
    let startTime = null;
    if (m.detached && c.pid) {
      try {
        const stat = fs.readFileSync('/proc/' + c.pid + '/stat', 'latin1');
        startTime = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] || null;
      } catch {}
    }
    c.once('spawn', () => send({ id: m.id, ev: 'spawn', pid: c.pid, startTime }));
    c.on('error', (e) => send({ id: m.id, ev: 'error', code: e.code, errno: e.errno, syscall: e.syscall, message: e.message }));
    if (c.stdout) c.stdout.on('data', (d) => send({ id: m.id, ev: 'out', fd: 1, data: d.toString('base64') }));
    if (c.stderr) c.stderr.on('data', (d) => send({ id: m.id, ev: 'out', fd: 2, data: d.toString('base64') }));
    c.once('exit', (code, signal) => send({ id: m.id, ev: 'exit', code, signal }));
    c.once('close', (code, signal) => { children.delete(m.id); send({ id: m.id, ev: 'close', code, signal }); });
  } catch (e) {
    send({ id: m.id, ev: 'error', code: e.code, errno: e.errno, syscall: e.syscall, message: e.message });
    send({ id: m.id, ev: 'close', code: ${NOT_RUN_EXIT_CODE}, signal: null });
  } finally {
    if (fd !== null) fs.closeSync(fd);
  }
}
let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  for (let i = pending.indexOf('\\n'); i >= 0; i = pending.indexOf('\\n')) {
    const m = JSON.parse(pending.slice(0, i));
    pending = pending.slice(i + 1);
    if (m.op === 'kill') { try { children.get(m.id)?.kill(m.signal); } catch {} } else start(m);
  }
});
process.stdin.on('end', () => process.exit(0));
// Its reader gone (the process it serves died): the same end, not a crash on the next event.
process.stdout.on('error', () => process.exit(0));
`;

/** Small and quiet: a young generation of 1 MB, one helper thread; it only relays bytes. */
export const STARTER_NODE_FLAGS = ['--max-old-space-size=32', '--max-semi-space-size=1', '--v8-pool-size=1'];

export type StarterEvent =
  | { id: number; ev: 'spawn'; pid: number; startTime: string | null }
  | { id: number; ev: 'error'; code?: string; errno?: number; syscall?: string; message: string }
  | { id: number; ev: 'out'; fd: 1 | 2; data: string }
  | { id: number; ev: 'exit' | 'close'; code: number | null; signal: NodeJS.Signals | null };
