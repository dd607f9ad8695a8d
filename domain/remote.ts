/**
 * A repository's `remote` [R8.6]: where its task branches (and, after a merge with `push`, its
 * base) are pushed. A remote name of the repository (`origin`), or a `file://`, `ssh://` or
 * `https://` URL. A URL never carries a credential: credentials come from the operator's push
 * configuration (TWS_PUSH_GIT_CONFIG, git/push-environment.ts), so none is stored or answered.
 */

/** The transports a push may open, each only for the push that needs it. */
export type PushProtocol = 'file' | 'ssh' | 'https';

export const REMOTE_MAX_LENGTH = 2048;

/** A remote name as `git remote add` takes it, without the forms an argv or a path could misread. */
const REMOTE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$/;

const URL_SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;

/**
 * Why this `remote` cannot be stored, in words that never quote it (it may hold a secret); null
 * when it can. `credentials` apart, so the answer can say what to do instead.
 */
export function remoteProblem(remote: string): { problem: string; credentials?: true } | null {
  if (remote.length === 0 || remote.length > REMOTE_MAX_LENGTH)
    return { problem: `remote must be 1 to ${REMOTE_MAX_LENGTH} characters` };
  // Whitespace and control characters have no place in a remote name or a URL.
  if (/[\s\x00-\x1f\x7f]/.test(remote)) return { problem: 'remote must not contain whitespace or control characters' };
  if (REMOTE_NAME.test(remote) && !remote.endsWith('.') && !remote.includes('..')) return null;
  const scheme = URL_SCHEME.exec(remote)?.[1]?.toLowerCase();
  if (!scheme || remote.slice(scheme.length + 1, scheme.length + 3) !== '//')
    return {
      problem:
        'remote must be a remote name of the repository (letters, digits, ".", "_", "-") or a file://, ssh:// or https:// URL',
    };
  if (scheme !== 'file' && scheme !== 'ssh' && scheme !== 'https')
    return { problem: 'remote must be a file://, ssh:// or https:// URL (other transports are not offered)' };
  let url: URL;
  try {
    url = new URL(remote);
  } catch {
    return { problem: 'remote is not a valid URL' };
  }
  // A password, or (https) a user name, which is how a token rides in a URL; a query may carry one too.
  if (url.password !== '' || (scheme === 'https' && url.username !== '') || url.search !== '' || url.hash !== '')
    return {
      problem:
        'remote must not carry credentials (a user name with a password or token, or a query): store the URL without them and give the service credentials through TWS_PUSH_GIT_CONFIG',
      credentials: true,
    };
  if (scheme === 'file') {
    if (url.host !== '' && url.host !== 'localhost') return { problem: 'a file:// remote names a folder on the host' };
    if (url.pathname === '/' || url.pathname === '') return { problem: 'a file:// remote names a folder on the host' };
    return null;
  }
  if (url.hostname === '' || url.hostname.startsWith('-')) return { problem: 'remote must name a host' };
  if (url.username.startsWith('-')) return { problem: 'remote must name a plain user' };
  return null;
}

/** Whether the stored `remote` is a URL (else it is a remote name of the repository). */
export const isRemoteUrl = (remote: string): boolean => URL_SCHEME.test(remote) && remote.includes('://');

/**
 * The transport git will use for a push URL, as git itself reads it: a URL's scheme, an scp-like
 * `[user@]host:path` (ssh), or a path (file). Null for any other transport, which a push never opens.
 */
export function pushProtocolOf(url: string): PushProtocol | null {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url)?.[1]?.toLowerCase();
  if (scheme) return scheme === 'file' || scheme === 'ssh' || scheme === 'https' ? scheme : null;
  if (url.startsWith('/') || url.startsWith('.')) return 'file';
  // git's rule: a colon before any slash is an scp-like ssh address; `ext::`, `fd::` are transports of their own.
  const colon = url.indexOf(':');
  const slash = url.indexOf('/');
  if (colon > 0 && (slash === -1 || colon < slash)) return url.includes('::') ? null : 'ssh';
  return 'file';
}

/**
 * A line git printed, fit for the service's log: every URL, scp-like address, path, quoted name,
 * host and ref replaced, so no location, branch or credential is written.
 */
export function redactedGitLine(line: string): string {
  return line
    .replace(/[A-Za-z][A-Za-z0-9+.-]*:\/\/\S*/g, '<url>')
    .replace(/'[^']*'|"[^"]*"/g, '<quoted>')
    .replace(/\S*@\S*:\S*/g, '<address>')
    .replace(/(^|\s)\/\S*/g, '$1<path>')
    .replace(/\brefs\/\S*/g, '<ref>')
    .replace(/\S+ -> \S+/g, '<ref> -> <ref>')
    .replace(/\b\d{1,3}(\.\d{1,3}){3}\b|\[[0-9A-Fa-f:]+\]|\b(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}\b/g, '<host>')
    .replace(/\bport \d+/g, 'port <port>')
    .slice(0, 300);
}
