/**
 * A small helper process that starts this process's git commands and agents for it.
 *
 * Why: Node starts a child with fork(), which copies the page tables of the whole parent. The
 * worker (~270 MB resident) and the gateway (~200 MB) paid 4-5 ms of CPU for every git command
 * and agent start, measured (bench, /tmp micro-benchmark: 10 ms per spawn from a 318 MB process,
 * 1.8 ms from a 56 MB one); in the worker's profile of a bulk cleanup, `ChildProcess.spawn` was
 * a fifth of its busy time. The helper is a bare `node -e` process of ~40 MB, started once (the
 * one expensive fork); each start is a JSON line to it, each event of the child a line back.
 *
 * What a caller gets back behaves as a ChildProcess for what this codebase and simple-git use:
 * 'spawn' (with pid), 'error', 'exit', 'close' in Node's order, stdout/stderr streams (or the
 * output appended to a file), kill(), ref()/unref(). If the helper itself ends, every command it
 * was running fails ('error', then exit code NOT_RUN_EXIT_CODE: simple-git reads a failure only
 * from a non-zero code), and the next start begins a new helper. A detached child (an agent) keeps running: it
 * is in its own session, as when the whole service stops, and its exit is then noticed by the
 * periodic check instead of at once.
 */
import { spawn as forkAndExec, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { constants as osConstants } from 'node:os';
import { Readable } from 'node:stream';
import { NOT_RUN_EXIT_CODE, STARTER_NODE_FLAGS, STARTER_SOURCE, type StarterEvent } from './process-starter-helper';

/** Where a started child's stdout and stderr go: to the caller as streams, nowhere, or appended to a file. */
type StartedOutput = 'pipe' | 'ignore' | { appendTo: string };

export interface StartOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  detached?: boolean;
  output?: StartedOutput;
}

/** The part of a ChildProcess a started command offers (see the file's comment). */
export class StartedProcess extends EventEmitter {
  pid: number | undefined = undefined;
  /**
   * A detached child's start time (clock ticks since boot, executors/host/process-identity.ts),
   * read by the helper before it could reap the child: known even for one that ended at once.
   */
  startTime: string | null = null;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  killed = false;
  readonly stdin = null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  private refed = true;
  private ended = false;
  /** See `codeOf`: set for git's commands (git/git.ts), whose output simple-git reads. */
  signalIsFailure = false;

  constructor(
    private readonly id: number,
    private readonly starter: ProcessStarter,
    piped: boolean,
    private readonly detached: boolean,
  ) {
    super();
    this.stdout = piped ? new Readable({ read() {} }) : null;
    this.stderr = piped ? new Readable({ read() {} }) : null;
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    if (this.ended) return false;
    this.starter.send({ op: 'kill', id: this.id, signal });
    this.killed = true;
    return true;
  }

  ref(): void {
    if (!this.refed && !this.ended) this.starter.holdOpen(+1);
    this.refed = true;
  }

  unref(): void {
    if (this.refed && !this.ended) this.starter.holdOpen(-1);
    this.refed = false;
  }

  /** @internal One event from the helper, in the order it saw them. */
  receive(event: StarterEvent): void {
    switch (event.ev) {
      case 'spawn':
        this.pid = event.pid;
        this.startTime = event.startTime ?? null;
        this.emit('spawn');
        return;
      case 'error':
        this.emit(
          'error',
          Object.assign(new Error(event.message), { code: event.code, errno: event.errno, syscall: event.syscall }),
        );
        return;
      case 'out':
        (event.fd === 1 ? this.stdout : this.stderr)?.push(Buffer.from(event.data, 'base64'));
        return;
      case 'exit':
        this.exitCode = this.codeOf(event.code, event.signal);
        this.signalCode = event.signal;
        this.emit('exit', this.exitCode, event.signal);
        return;
      case 'close':
        if (this.signalIsFailure && event.signal) this.stderr?.push(Buffer.from(`ended by ${event.signal}\n`));
        this.finish(this.codeOf(event.code, event.signal), event.signal);
    }
  }

  /**
   * With `signalIsFailure`, a child ended by a signal reads as exit code 128 + its number (as a
   * shell says it) with a line on stderr: simple-git takes a failure only from a non-zero code
   * with some stderr, and would otherwise take a git killed half-way for a success with no output.
   */
  private codeOf(code: number | null, signal: NodeJS.Signals | null): number | null {
    if (!this.signalIsFailure || !signal) return code;
    return 128 + (osConstants.signals[signal] ?? 0);
  }

  /** 'close' comes after every byte of output was read, as Node's own. */
  private finish(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.ended) return;
    this.ended = true;
    if (this.refed) this.starter.holdOpen(-1);
    const streams = [this.stdout, this.stderr].filter((s): s is Readable => s !== null);
    let open = streams.length;
    const close = () => this.emit('close', code, signal);
    if (open === 0) return void process.nextTick(close);
    for (const stream of streams) {
      stream.once('end', () => {
        if (--open === 0) close();
      });
      stream.push(null);
      // Output nobody reads would hold 'end' (and so 'close') back for ever.
      if (stream.listenerCount('data') === 0 && !stream.readableFlowing) stream.resume();
    }
  }

  /** @internal The helper ended while this ran. A started detached child runs on unwatched: no event (it has not exited). */
  lost(): void {
    if (this.ended) return;
    if (this.detached && this.pid !== undefined) {
      this.ended = true;
      if (this.refed) this.starter.holdOpen(-1);
      return;
    }
    this.receive({
      id: this.id,
      ev: 'error',
      code: 'ESTARTERGONE',
      message: 'the process starter ended while the command ran',
    });
    if (this.exitCode === null && this.signalCode === null)
      this.receive({ id: this.id, ev: 'exit', code: NOT_RUN_EXIT_CODE, signal: null });
    this.finish(this.exitCode ?? NOT_RUN_EXIT_CODE, this.signalCode);
  }
}

export class ProcessStarter {
  private helper: ChildProcess | null = null;
  private running = new Map<number, StartedProcess>();
  private nextId = 1;
  private held = 0;

  /** Starts `file` with `args` through the helper; the result is there at once, its pid from 'spawn'. */
  spawn(file: string, args: readonly string[], options: StartOptions = {}): StartedProcess {
    const id = this.nextId++;
    const output = options.output ?? 'pipe';
    const child = new StartedProcess(id, this, output === 'pipe', options.detached === true);
    this.running.set(id, child);
    child.once('close', () => this.running.delete(id));
    this.holdOpen(+1);
    this.send({
      op: 'start',
      id,
      file,
      args,
      cwd: options.cwd,
      env: options.env ?? process.env,
      detached: options.detached === true,
      ...(typeof output === 'object' ? { appendTo: output.appendTo } : { output }),
    });
    return child;
  }

  /** @internal */
  send(message: object): void {
    this.ensureHelper().stdin!.write(JSON.stringify(message) + '\n');
  }

  /** @internal While a command runs (and is not unref'd), the helper's pipes keep this process up, as the command's own would. */
  holdOpen(delta: number): void {
    this.held += delta;
    const helper = this.helper;
    if (!helper) return;
    for (const pipe of [helper.stdin, helper.stdout] as unknown as { ref(): void; unref(): void }[]) {
      if (this.held > 0) pipe.ref();
      else pipe.unref();
    }
  }

  private ensureHelper(): ChildProcess {
    if (this.helper) return this.helper;
    const helper = forkAndExec(process.execPath, [...STARTER_NODE_FLAGS, '-e', STARTER_SOURCE], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env: {},
    });
    this.helper = helper;
    helper.unref();
    let pending = '';
    helper.stdout!.setEncoding('utf8');
    helper.stdout!.on('data', (chunk: string) => {
      pending += chunk;
      for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n')) {
        const line = pending.slice(0, i);
        pending = pending.slice(i + 1);
        let event: StarterEvent;
        try {
          event = JSON.parse(line) as StarterEvent;
        } catch {
          // Not the helper's protocol: nothing it says can be trusted; what it ran fails (below).
          helper.kill('SIGKILL');
          return;
        }
        this.running.get(event.id)?.receive(event);
      }
    });
    // A write to a helper that just ended: its end is handled below.
    helper.stdin!.on('error', () => {});
    let gone = false;
    const end = () => {
      if (gone) return;
      gone = true;
      if (this.helper === helper) this.helper = null;
      const lost = [...this.running.values()];
      this.running.clear();
      for (const child of lost) child.lost();
    };
    // 'close', not 'exit': every line it wrote before it ended is read first.
    helper.once('close', end);
    // It could not be started at all (ENOENT of node itself, EAGAIN): the same as its end.
    helper.once('error', end);
    this.holdOpen(0);
    return helper;
  }
}

let shared: ProcessStarter | null = null;

/** This process's one helper (started on first use). */
export function processStarter(): ProcessStarter {
  shared ??= new ProcessStarter();
  return shared;
}

/** The subset of spawn options the starter is handed by simple-git (cwd, env; it pipes stdio). */
export function startFromSpawnOptions(
  file: string,
  args: readonly string[],
  options: SpawnOptions | undefined,
): StartedProcess {
  const started = processStarter().spawn(file, args, {
    cwd: typeof options?.cwd === 'string' ? options.cwd : options?.cwd?.toString(),
    env: options?.env,
    detached: options?.detached,
  });
  started.signalIsFailure = true;
  return started;
}
