/**
 * A span per git process this service starts, named after the command (`git worktree add`,
 * `git rev-parse`): never a path, a branch or any other argument, in the name or elsewhere. It is
 * the child of the step (or the request) that ran it and carries that step's task, session and
 * operation (domain/trace-ids.ts), and git's exit code. A non-zero exit is not marked as a
 * failure: many are answers (`rev-parse --verify` of a branch that is not there); the step's own
 * span says whether the step failed. With tracing off the span is @opentelemetry/api's no-op.
 */
import type { EventEmitter } from 'node:events';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { idAttributes, idsIn } from '../domain/trace-ids';

const tracer = trace.getTracer('task-workspaces');

/** git's own options (before the command) that take the next argument as their value. */
const OPTIONS_WITH_VALUE = new Set(['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--config-env']);

/** Commands whose next word belongs to the name, and the words that may stand there. */
const SUBCOMMANDS: Readonly<Record<string, ReadonlySet<string>>> = {
  worktree: new Set(['add', 'list', 'lock', 'move', 'prune', 'remove', 'repair', 'unlock']),
  stash: new Set(['apply', 'branch', 'clear', 'create', 'drop', 'list', 'pop', 'push', 'show', 'store']),
  bundle: new Set(['create', 'list-heads', 'unbundle', 'verify']),
  remote: new Set(['add', 'get-url', 'prune', 'remove', 'rename', 'set-url', 'show', 'update']),
  submodule: new Set(['add', 'deinit', 'foreach', 'init', 'status', 'sync', 'update']),
};

/** `git worktree add` for `['worktree', 'add', '-b', <branch>, <path>, <base>]`; `git` when no command can be read. */
export function gitCommandName(args: readonly string[]): string {
  let at = 0;
  while (at < args.length && args[at]!.startsWith('-')) at += OPTIONS_WITH_VALUE.has(args[at]!) ? 2 : 1;
  const command = args[at];
  if (command === undefined || !/^[a-z][a-z0-9-]*$/.test(command)) return 'git';
  const next = args[at + 1];
  return next !== undefined && SUBCOMMANDS[command]?.has(next) ? `git ${command} ${next}` : `git ${command}`;
}

/** Starts a git process with `start` inside a span that ends with it. */
export function tracedGitProcess<T extends EventEmitter>(args: readonly string[], start: () => T): T {
  const span = tracer.startSpan(gitCommandName(args), { attributes: idAttributes(idsIn(context.active())) });
  let child: T;
  try {
    child = start();
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'the process did not start' });
    span.end();
    throw err;
  }
  if (!span.isRecording()) return child;
  let ended = false;
  const end = () => {
    if (!ended) span.end();
    ended = true;
  };
  child.once('error', (err: NodeJS.ErrnoException) => {
    // Its code (ENOENT, ESTARTERGONE), never its message, which may name a path.
    span.setStatus({ code: SpanStatusCode.ERROR, message: typeof err.code === 'string' ? err.code : 'error' });
    end();
  });
  child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
    if (code !== null) span.setAttribute('process.exit.code', code);
    if (signal) span.setStatus({ code: SpanStatusCode.ERROR, message: signal });
    end();
  });
  return child;
}
