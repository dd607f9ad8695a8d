/**
 * Pushing refs of a repository to its remote [R8.6]: a task's branch (`POST /v1/tasks/:id/push`),
 * a base branch after a merge. Runs on the host that holds the repository, in the environment of
 * git/push-environment.ts. What a failure says is a category: git's own words name the remote's
 * location and the refs, so they are never answered, and logged only redacted (domain/remote.ts).
 */
import { isRemoteUrl, pushProtocolOf, redactedGitLine } from '../domain/remote';
import { gitAt, gitExitCode, run } from './git';
import { operatorPushSettings, pushSettings, withSettings } from './push-environment';

export interface PushRefsInput {
  /** The repository the refs are read from (its checkout, or a worktree of it). */
  sourcePath: string;
  /** A remote name of the repository, or a file://, ssh:// or https:// URL. */
  remote: string;
  /** Each local ref (`refs/heads/x`) and the remote ref it is pushed to. */
  refs: { local: string; remote: string }[];
  /** Move the remote's refs even where that is no fast-forward. */
  force?: boolean;
}

/** A remote ref as the push left it. */
export interface PushedRef {
  ref: string;
  commit: string;
}

export interface PushOptions {
  binary: string;
  /** The operator's push configuration file (TWS_PUSH_GIT_CONFIG); null: none. */
  operatorConfig: string | null;
}

/**
 * Why a push did not happen, as a word the answer may carry:
 * `no_such_ref` (a local ref is missing), `remote_unknown` (no such remote name in the repository),
 * `protocol_not_allowed` (a transport a push never opens), `push_config_unreadable`,
 * `unreachable`, `authentication`, `rejected` (the remote refused a ref), `failed` (anything else).
 */
export type PushFailureReason =
  | 'no_such_ref'
  | 'remote_unknown'
  | 'protocol_not_allowed'
  | 'push_config_unreadable'
  | 'unreachable'
  | 'authentication'
  | 'rejected'
  | 'failed';

export class PushFailure extends Error {
  constructor(
    readonly reason: PushFailureReason,
    /** git's error lines, redacted: for the log only. */
    readonly gitSays: string[] = [],
    readonly exitCode: number | null = null,
  ) {
    super(`push failed: ${reason}`);
  }
}

const REF = /^refs\/[A-Za-z0-9._\/-]+$/;

/** What git printed that says why, redacted; its trace lines (GIT_TRACE) left out. */
function errorLines(err: unknown): string[] {
  const text = err instanceof Error ? err.message : String(err);
  return text
    .split('\n')
    .filter((line) => /^(fatal|error|remote|ssh|!|\s+!|To |Permission)/.test(line))
    .slice(0, 8)
    .map(redactedGitLine);
}

function failureOf(err: unknown): PushFailure {
  const text = err instanceof Error ? err.message : String(err);
  const reason: PushFailureReason = /\[(remote )?rejected\]|failed to push some refs|pre-receive hook declined/.test(
    text,
  )
    ? 'rejected'
    : /Authentication failed|Permission denied|could not read Username|terminal prompts disabled|returned error: 403/.test(
          text,
        )
      ? 'authentication'
      : /does not appear to be a git repository|Could not read from remote|Could not resolve host|Connection refused|unable to access|No such file or directory|not found/i.test(
            text,
          )
        ? 'unreachable'
        : 'failed';
  return new PushFailure(reason, errorLines(err), gitExitCode(err));
}

/**
 * Pushes each local ref's commit to its remote ref (`+` with `force`), all in one `git push`, and
 * answers the commit each remote ref now names. No hook runs (nor the remote's own, for a local
 * remote: its receive-pack runs with hooks off too), no submodule is pushed, no tag follows.
 */
export async function pushRefs(input: PushRefsInput, options: PushOptions): Promise<PushedRef[]> {
  for (const ref of input.refs)
    if (!REF.test(ref.local) || !REF.test(ref.remote) || ref.remote.includes('..'))
      throw new Error('pushRefs: refs must be full ref names');
  const git = gitAt(input.sourcePath, { binary: options.binary });
  // The commits are read once: what is pushed is what is answered, whatever moves meanwhile.
  const commits: string[] = [];
  for (const ref of input.refs) {
    const commit = (
      await run(git, ['rev-parse', '--verify', '--quiet', `${ref.local}^{commit}`]).catch(() => '')
    ).trim();
    if (!/^[0-9a-f]{40,64}$/.test(commit)) throw new PushFailure('no_such_ref');
    commits.push(commit);
  }
  // A name is the repository's remote (its push URL, as its config rewrites it); the URL is then pushed to as it is.
  const url = isRemoteUrl(input.remote)
    ? input.remote
    : (
        await run(git, ['remote', 'get-url', '--push', '--', input.remote]).catch(() => {
          throw new PushFailure('remote_unknown');
        })
      ).trim();
  const protocol = pushProtocolOf(url);
  if (!protocol) throw new PushFailure('protocol_not_allowed');
  const operator = await operatorPushSettings(git, options.operatorConfig).catch(() => {
    throw new PushFailure('push_config_unreadable');
  });
  const pushing = gitAt(input.sourcePath, {
    binary: options.binary,
    forPush: (env) => withSettings(env, pushSettings(protocol, operator)),
  });
  const refspecs = input.refs.map((ref, i) => `${input.force ? '+' : ''}${commits[i]}:${ref.remote}`);
  await run(pushing, [
    'push',
    '--porcelain',
    '--no-verify',
    '--no-follow-tags',
    '--no-signed',
    '--no-recurse-submodules',
    `--receive-pack=${receivePack(protocol, options.binary)}`,
    '--',
    url,
    ...refspecs,
  ]).catch((err: unknown) => {
    throw failureOf(err);
  });
  return input.refs.map((ref, i) => ({ ref: ref.remote, commit: commits[i]! }));
}

/**
 * The program that receives a push. Given always, so no `remote.<name>.receivepack` of the
 * repository's config is run; for a local remote it runs here, as the service, so it runs with
 * that repository's hooks, fsmonitor and automatic gc off.
 */
function receivePack(protocol: string, binary: string): string {
  if (protocol !== 'file') return 'git-receive-pack';
  const quoted = `'${binary.replace(/'/g, `'\\''`)}'`;
  return `${quoted} -c core.hooksPath=/dev/null -c core.fsmonitor=false -c receive.autogc=false -c gc.auto=0 receive-pack`;
}
