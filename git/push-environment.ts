/**
 * The environment of a push [R8.6]: the service's hardened git (domain/git-hardening.ts), opened
 * for exactly what one push needs and nothing else:
 * - the one transport of the remote's URL (`protocol.<it>.allow`); for a push over ssh or https
 *   even `file` is closed, so no rewrite of the URL by the repository's config (`insteadOf`) can
 *   turn it into a local push;
 * - the operator's credentials: the `credential.*`, `http.*`, `core.sshCommand` and `ssh.variant`
 *   settings of the file TWS_PUSH_GIT_CONFIG names, given as command-line configuration after the
 *   hardening's (so they win over anything the repository's config says, and the helper list the
 *   hardening emptied holds the operator's helpers only); over ssh without one, `ssh` in batch mode
 *   with the service user's own keys and known hosts.
 * Hooks, fsmonitor, filters, pagers and the rest stay as the hardening set them: nothing the
 * repository or an agent wrote runs.
 */
import type { SimpleGit } from 'simple-git';
import type { PushProtocol } from '../domain/remote';
import { run } from './git';

/** The keys of the operator's push configuration a push takes (git prints them lowercased but for a subsection). */
const OPERATOR_KEY = /^(credential\..+|http\..+|core\.sshcommand|ssh\.variant)$/;

/** The ssh a push over ssh runs when the operator's configuration names none. */
const DEFAULT_SSH_COMMAND = 'ssh -o BatchMode=yes';

/** The settings of the operator's push configuration file a push takes, in the file's order; none without a file. */
export async function operatorPushSettings(git: SimpleGit, file: string | null): Promise<[string, string][]> {
  if (!file) return [];
  // --file reads that file alone, and without its include.* (git's default for --file).
  const listed = await run(git, ['config', '--file', file, '--null', '--list']);
  const pairs: [string, string][] = [];
  for (const entry of listed.split('\0')) {
    if (entry === '') continue;
    const newline = entry.indexOf('\n');
    const key = newline === -1 ? entry : entry.slice(0, newline);
    const value = newline === -1 ? 'true' : entry.slice(newline + 1);
    if (OPERATOR_KEY.test(key.toLowerCase())) pairs.push([key, value]);
  }
  return pairs;
}

/** The settings a push of this transport adds after the hardening's. */
export function pushSettings(protocol: PushProtocol, operator: readonly [string, string][]): [string, string][] {
  return [
    ['protocol.file.allow', protocol === 'file' ? 'always' : 'never'],
    [`protocol.${protocol}.allow`, 'always'],
    ['push.recurseSubmodules', 'no'],
    ...(protocol === 'ssh' ? [['core.sshCommand', DEFAULT_SSH_COMMAND] as [string, string]] : []),
    ...operator,
  ];
}

/** The hardened environment with these settings appended to its command-line configuration (the last of a key wins). */
export function withSettings(env: Record<string, string>, pairs: readonly [string, string][]): Record<string, string> {
  const out = { ...env };
  let count = Number(out.GIT_CONFIG_COUNT ?? 0);
  for (const [key, value] of pairs) {
    out[`GIT_CONFIG_KEY_${count}`] = key;
    out[`GIT_CONFIG_VALUE_${count}`] = value;
    count++;
  }
  out.GIT_CONFIG_COUNT = String(count);
  return out;
}
