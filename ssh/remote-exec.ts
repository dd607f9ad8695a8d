/**
 * Running a script on an SSH target: the one way this service touches a remote machine.
 *
 * No shell command is ever built from input, on either side. What sshd runs is constant:
 * `bash -c '<PRELUDE><script>' tws-remote`, where the script is a constant of the caller's code;
 * the arguments travel on the channel's stdin (a count, then each argument, each ended by NUL),
 * and the prelude reads them into "$@". bash's `read` takes a pipe byte by byte, so whatever
 * follows the arguments (the caller's stdin payload, then EOF) is left for the script.
 *
 * It runs on a pooled connection of ssh/connection.ts, whose typed refusals it shares.
 *
 * Each run is a span, `ssh <script's name>` (`namedScript`), with the target's id, the task,
 * session and operation of the step that ran it (domain/trace-ids.ts) and the exit code: never
 * the host, a path or an argument. With tracing off the span is @opentelemetry/api's no-op.
 */
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ClientChannel } from 'ssh2';
import { idAttributes, idsIn } from '../domain/trace-ids';
import { connectionFor, SshRefusal, unpooledConnection, type PooledConnection, type SshTarget } from './connection';

export interface RemoteResult {
  code: number | null;
  signal: string | null;
  stdout: Buffer;
  /** The last STDERR_LIMIT bytes, for a log line or a classified reason; never shown to callers as is. */
  stderr: string;
}

const STDOUT_LIMIT = 16 * 1024 * 1024;
const STDERR_LIMIT = 4 * 1024;

/** Reads the arguments from stdin into "$@" (a malformed header, which this module never sends, exits 96). No single quote: the whole is sent single-quoted. */
const PRELUDE =
  'IFS= read -r -d "" n || exit 96; [[ $n =~ ^[0-9]+$ ]] || exit 96; a=(); ' +
  'for ((i=0;i<n;i++)); do IFS= read -r -d "" x || exit 96; a+=("$x"); done; set -- "${a[@]}"; unset n a i x\n';

const tracer = trace.getTracer('task-workspaces');

/** The scripts' names for their spans, by script. */
const scriptNames = new Map<string, string>();

/** Names a constant script (`materialize slot`) for the span of each of its runs; returns it unchanged. */
export function namedScript(name: string, script: string): string {
  scriptNames.set(script, name);
  return script;
}

/** Runs a constant bash script on the target with the args delivered over stdin (never in a command string). */
export async function runRemote(
  target: SshTarget,
  script: string,
  args: string[],
  opts: { stdin?: Buffer | NodeJS.ReadableStream; timeoutMs?: number; unpooled?: boolean } = {},
): Promise<RemoteResult> {
  // Programming errors, not refusals: the script is code of this service and must stay constant.
  if (script.includes("'"))
    throw new Error('runRemote: a remote script may not contain a single quote (it is sent single-quoted)');
  if (args.some((arg) => arg.includes('\0')))
    throw new Error('runRemote: an argument may not contain NUL (NUL ends each argument)');
  const attributes = { 'tws.ssh_target_id': target.id, ...idAttributes(idsIn(context.active())) };
  return tracer.startActiveSpan(
    `ssh ${scriptNames.get(script) ?? 'script'}`,
    { kind: SpanKind.CLIENT, attributes },
    async (span) => {
      try {
        const result = await runOnTarget(target, script, args, opts);
        if (result.code !== null) span.setAttribute('process.exit.code', result.code);
        else span.setStatus({ code: SpanStatusCode.ERROR, message: result.signal ?? 'no exit status' });
        return result;
      } catch (err) {
        // A refusal's code and classified reason; any other failure by its kind alone.
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: err instanceof SshRefusal ? `${err.code}: ${err.reason}` : 'transport_failed',
        });
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

async function runOnTarget(
  target: SshTarget,
  script: string,
  args: string[],
  opts: { stdin?: Buffer | NodeJS.ReadableStream; timeoutMs?: number; unpooled?: boolean },
): Promise<RemoteResult> {
  if (opts.unpooled) {
    const own = await unpooledConnection(target);
    try {
      return await execOn(own, `bash -c '${PRELUDE}${script}' tws-remote`, args, opts);
    } finally {
      await own.close();
    }
  }
  let connection = await connectionFor(target);
  await connection.acquire();
  if (connection.lost) {
    // It dropped while this run waited (nothing ran on it yet): one fresh connection, not a refusal.
    connection.release();
    connection = await connectionFor(target);
    await connection.acquire();
  }
  try {
    return await execOn(connection, `bash -c '${PRELUDE}${script}' tws-remote`, args, opts);
  } finally {
    connection.release();
  }
}

function execOn(
  connection: PooledConnection,
  command: string,
  args: string[],
  opts: { stdin?: Buffer | NodeJS.ReadableStream; timeoutMs?: number },
): Promise<RemoteResult> {
  return new Promise<RemoteResult>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outcome();
    };
    const lost = () =>
      new SshRefusal('ssh_target_unavailable', connection.lost ? 'connection_lost' : 'channel_refused');

    const onChannel = (err: Error | undefined, channel: ClientChannel) => {
      if (err) return settle(() => reject(lost()));
      const stdout: Buffer[] = [];
      let stdoutBytes = 0;
      let stderr = Buffer.alloc(0);
      let exit: { code: number | null; signal: string | null } | null = null;
      const abandon = (failure: Error) => {
        settle(() => reject(failure));
        channel.close();
      };
      channel.on('data', (chunk: Buffer) => {
        stdoutBytes += chunk.length;
        if (stdoutBytes > STDOUT_LIMIT)
          return abandon(new Error(`runRemote: the remote script wrote more than ${STDOUT_LIMIT} bytes to stdout`));
        stdout.push(chunk);
      });
      channel.stderr.on('data', (chunk: Buffer) => {
        stderr = Buffer.concat([stderr, chunk]);
        if (stderr.length > STDERR_LIMIT * 4) stderr = stderr.subarray(-STDERR_LIMIT);
      });
      channel.on('exit', (code: number | null, signal?: string) => {
        exit = typeof code === 'number' ? { code, signal: null } : { code: null, signal: signal ?? null };
      });
      // A write racing the remote's exit fails; the close that follows says how the script ended.
      channel.on('error', () => {});
      channel.on('close', () =>
        settle(() => {
          if (exit === null && connection.lost) return reject(lost());
          resolve({
            ...(exit ?? { code: null, signal: null }),
            stdout: Buffer.concat(stdout),
            stderr: stderr.subarray(-STDERR_LIMIT).toString('utf8'),
          });
        }),
      );
      if (opts.timeoutMs !== undefined) {
        timer = setTimeout(() => {
          try {
            channel.signal('KILL');
          } catch {
            // the channel is going away already
          }
          abandon(new SshRefusal('ssh_target_unavailable', 'command_timeout'));
        }, opts.timeoutMs);
      }

      channel.write(argumentHeader(args));
      const input = opts.stdin;
      if (input === undefined) channel.end();
      else if (Buffer.isBuffer(input)) channel.end(input);
      else {
        input.once('error', () => abandon(new Error('runRemote: the stdin stream failed')));
        input.pipe(channel);
      }
    };

    try {
      connection.client.exec(command, onChannel);
    } catch {
      // ssh2 throws when the socket is gone already (the target dropped since the connection was pooled).
      settle(() => reject(new SshRefusal('ssh_target_unavailable', 'connection_lost')));
    }
  });
}

/** The prelude's input: the count, then each argument, each ended by NUL. */
function argumentHeader(args: string[]): Buffer {
  const nul = Buffer.from([0]);
  return Buffer.concat([Buffer.from(`${args.length}\0`), ...args.flatMap((arg) => [Buffer.from(arg, 'utf8'), nul])]);
}
