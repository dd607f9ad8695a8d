/**
 * A diff's git command whose output is bounded [R8.1]: a task's diff can be larger than any
 * answer may be (a vendored tree, a generated file), and simple-git (git/git.ts `run`) keeps a
 * command's whole output in memory before it answers. This reads stdout up to `maxBytes` and then
 * stops git, so no diff costs more memory than its cut. It also takes the exit codes that are
 * answers rather than failures (`diff --no-index` ends 1 when the files differ, and its output is
 * the point). Same environment as every git command of the service (git-environment.ts: the
 * repository pinned, the hardening, every diff driver emptied), started through the process
 * starter, in a span of its own.
 */
import { startFromSpawnOptions } from './process-starter';
import { tracedGitProcess } from './command-span';
import { gitEnvironment } from './git-environment';
import type { GitOptions } from './git';

export interface BoundedOutput {
  out: Buffer;
  /** The output went on past `maxBytes`: `out` is its first `maxBytes` bytes and git was stopped. */
  cut: boolean;
}

/** A git that hangs (a file that blocks on read) is stopped after this long, and fails. */
const STALL_MS = 120_000;
/** What is kept of stderr for a failure's message (git's trace is on it too: GIT_TRACE=2). */
const STDERR_KEPT = 4096;

class DiffCommandFailed extends Error {
  constructor(
    readonly exitCode: number | null,
    stderrTail: string,
  ) {
    super(`git ended with ${exitCode ?? 'a signal'}: ${stderrTail.split('\n').filter(isGitMessage).join(' ')}`);
    this.name = 'DiffCommandFailed';
  }
}

// Lines of git's trace (`12:00:00.000000 git.c:…`) are not its message.
const isGitMessage = (line: string): boolean => line !== '' && !/^\d\d:\d\d:\d\d\.\d+ /.test(line);

export function boundedGit(
  dir: string,
  args: string[],
  options: GitOptions & { maxBytes: number; okCodes?: readonly number[] },
): Promise<BoundedOutput> {
  const okCodes = options.okCodes ?? [0];
  return new Promise((resolve, reject) => {
    const child = tracedGitProcess(args, () =>
      startFromSpawnOptions(options.binary, args, { cwd: dir, env: gitEnvironment(dir, options.anyOwner === true) }),
    );
    const chunks: Buffer[] = [];
    let size = 0;
    let cut = false;
    let stderr = '';
    const stall = setTimeout(() => child.kill('SIGKILL'), STALL_MS);
    child.stdout?.on('data', (chunk: Buffer) => {
      if (cut) return;
      const room = options.maxBytes - size;
      if (chunk.length > room) {
        if (room > 0) chunks.push(chunk.subarray(0, room));
        size = options.maxBytes;
        cut = true;
        child.kill('SIGKILL');
        return;
      }
      chunks.push(chunk);
      size += chunk.length;
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_KEPT);
    });
    child.once('error', (err) => {
      clearTimeout(stall);
      reject(err);
    });
    child.once('close', (code: number | null) => {
      clearTimeout(stall);
      if (cut) resolve({ out: Buffer.concat(chunks), cut: true });
      else if (code !== null && okCodes.includes(code)) resolve({ out: Buffer.concat(chunks), cut: false });
      else reject(new DiffCommandFailed(code, stderr));
    });
  });
}
