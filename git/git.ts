/**
 * Where this product's git processes come from: a simple-git instance over the configured
 * binary (so fault injection hands in a wrapper script), hardened by git-environment.ts and
 * started through the process starter. The commands themselves live beside it, one file per
 * concept (branches, checkout, worktrees, worktree-status), used by the host activities (which
 * change worktrees) and by the gateway's read-only input checks.
 */
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import { simpleGit, type SimpleGit } from 'simple-git';
import { startFromSpawnOptions } from './process-starter';
import { tracedGitProcess } from './command-span';
import { gitEnvironment, HARDENING_IS_MEANT } from './git-environment';

export interface GitOptions {
  binary: string;
  /**
   * Reads a repository found by discovery whoever owns it (safe.directory=*): only for a command
   * that runs no program a repository can name (`rev-parse --show-toplevel` of a path to register).
   */
  anyOwner?: boolean;
  /** Settings of the service's own for this command, read after the hardening (git/merge-commits.ts: the built-in merge driver). */
  config?: readonly (readonly [string, string])[];
  /** Variables of the service's own for this command (the identity of a commit it makes). */
  environment?: Record<string, string>;
  /**
   * A push's own environment (git/push-environment.ts: the one transport it needs, the operator's
   * credentials), made from the hardened one; its `--receive-pack` is then the service's to give.
   */
  forPush?: (env: Record<string, string>) => Record<string, string>;
}

/** The git binaries whose processes this process starts through its process starter. */
const startedThroughStarter = new Set<string>();

/**
 * simple-git starts git with `child_process.spawn`, and no option of it changes that; git.ts's
 * binaries are routed to the process starter (git/process-starter.ts: a fork of this large
 * process costs 4-5 ms of CPU, one of the small helper a fraction of that). Every other spawn
 * (the agent shim, the services) goes to Node's own, unchanged.
 */
function startGitThroughStarter(binary: string): void {
  if (startedThroughStarter.has(binary)) return;
  if (startedThroughStarter.size === 0) {
    const nodeSpawn = childProcess.spawn;
    // simple-git's call: (binary, args, { cwd, env }) with the default pipes.
    function routed(this: unknown, file: string, ...rest: unknown[]) {
      const [args, options] = rest as [unknown, childProcess.SpawnOptions | undefined];
      // Each git process in a span of its own (git/command-span.ts).
      if (startedThroughStarter.has(file) && Array.isArray(args) && options?.stdio === undefined)
        return tracedGitProcess(args as string[], () => startFromSpawnOptions(file, args as string[], options));
      return Reflect.apply(nodeSpawn, this, [file, ...rest]);
    }
    childProcess.spawn = routed as unknown as typeof childProcess.spawn;
    // simple-git's ESM build holds a live binding to the builtin's export.
    syncBuiltinESMExports();
  }
  startedThroughStarter.add(binary);
}

export function gitAt(dir: string, options: GitOptions): SimpleGit {
  startGitThroughStarter(options.binary);
  const hardened = gitEnvironment(dir, options.anyOwner === true, options);
  const env = options.forPush ? options.forPush(hardened) : hardened;
  return simpleGit({
    baseDir: dir,
    binary: options.binary,
    maxConcurrentProcesses: 4,
    trimmed: false,
    allowEnvironment: Object.keys(env),
    unsafe: options.forPush ? { ...HARDENING_IS_MEANT, allowUnsafePack: true } : HARDENING_IS_MEANT,
    errors: withExitCode,
  }).env(env);
}

/**
 * simple-git's error for a failed command says what git printed, not the code it ended with: the
 * code is kept on it, for the callers to whom one code is an answer (see `gitExitCode`).
 */
function withExitCode(
  error: Buffer | Error | undefined,
  result: { exitCode: number; stdOut: Buffer[] },
): Buffer | Error | undefined {
  return error instanceof Error && result.exitCode !== 0
    ? Object.assign(error, { gitExitCode: result.exitCode, gitStdout: result.stdOut })
    : error;
}

/** What a failed command printed on stdout, for the commands whose failure is an answer (merge-tree's conflicts). */
export function gitStdout(err: unknown): string | null {
  const out = (err as { gitStdout?: unknown } | null)?.gitStdout;
  return Array.isArray(out) ? Buffer.concat(out as Buffer[]).toString('utf8') : null;
}

/**
 * The code a failed git command ended with; null for anything else (a command that could not be
 * started, or whose end was not seen, ends with the process starter's own code, never git's).
 */
export function gitExitCode(err: unknown): number | null {
  const code = (err as { gitExitCode?: unknown } | null)?.gitExitCode;
  return typeof code === 'number' ? code : null;
}

/** One git command's output; every command file of this folder runs git through it. */
export async function run(git: SimpleGit, args: string[]): Promise<string> {
  return git.raw(args);
}
