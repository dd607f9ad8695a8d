/**
 * The service's git never runs a program that a repository, its files or an agent can name.
 * Every git command of the worker, the gateway and the CLI, on the host and on an
 * SSH target, runs with the settings below: they are git's command-line configuration (given
 * through GIT_CONFIG_COUNT, so no value is ever parsed from an argv), which git reads last and so
 * wins over the repository's `config`, `config.worktree` and anything they include.
 *
 * Found from git's documentation of every key that names a program or a shell command (git-config
 * "core.*", "filter.*", "diff.*", "merge.*", "credential.*", "protocol.*", githooks(5)) and from
 * simple-git's list of such keys (@simple-git/argv-parser), which names the same ones:
 * - hooks (`core.hooksPath` to /dev/null: no hook file runs, whoever wrote it);
 * - `core.fsmonitor` (a program git runs on `status`, `add`, `checkout`);
 * - the pager, the editors, askpass and credential helpers (none is ever wanted: no terminal);
 * - every transport but the local one (`protocol.allow=never`, `file` allowed: the bundles the
 *   SSH executor brings home), so `ext::`, `core.sshCommand`, `core.gitProxy`,
 *   `remote.*.uploadpack` and `url.*.insteadOf` have nothing to run;
 * - `core.alternateRefsCommand` (run on a fetch when the repository has alternates);
 * - attributes from outside the repository (`core.attributesFile`, the system file) are not read;
 *   attributes inside it (a committed `.gitattributes`, `info/attributes`) may name a filter, a
 *   diff or a merge driver, but a driver runs only what config defines for it, and every driver the
 *   repository's config files define (with their includes) is emptied: `namedSectionOverrides`;
 * - no automatic gc or maintenance in the service's own commands, no submodule recursion,
 *   no signing program.
 * The environment is the service's own (git/git.ts): no system or global config file at all, so
 * the service's git depends only on the repository's config and these overrides.
 */

/** Settings every git command of the service runs with (key, value). */
export const GIT_HARDENING_CONFIG: readonly (readonly [string, string])[] = [
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.attributesFile', '/dev/null'],
  ['core.pager', 'cat'],
  ['core.editor', ':'],
  ['sequence.editor', ':'],
  ['core.askPass', ''],
  ['credential.helper', ''], // the empty helper resets the list: no helper runs
  ['core.sshCommand', 'false'],
  ['core.gitProxy', 'none'],
  ['core.alternateRefsCommand', ''],
  ['diff.external', ''],
  ['protocol.allow', 'never'],
  ['protocol.ext.allow', 'never'],
  ['protocol.ssh.allow', 'never'],
  ['protocol.git.allow', 'never'],
  ['protocol.http.allow', 'never'],
  ['protocol.https.allow', 'never'],
  ['protocol.file.allow', 'always'],
  ['submodule.recurse', 'false'],
  // A submodule's work tree is never examined (that would run git inside a repository an agent
  // made); its recorded commit still is.
  ['diff.ignoreSubmodules', 'dirty'],

  ['fetch.recurseSubmodules', 'false'],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
  ['gc.auto', '0'],
  ['maintenance.auto', 'false'],
];

/**
 * Sections a config file names (`[filter "x"]`, `[protocol "ext"]`): for each, the settings that
 * empty the programs of a driver so named, or refuse a transport so named.
 */
export const NAMED_SECTION_SETTINGS: Readonly<
  Record<'filter' | 'diff' | 'merge' | 'protocol', readonly (readonly [string, string])[]>
> = {
  filter: [
    ['clean', ''],
    ['smudge', ''],
    ['process', ''],
    ['required', 'false'], // a required filter with no program would fail every checkout
  ],
  diff: [
    ['textconv', ''],
    ['command', ''],
  ],
  merge: [['driver', '']],
  // A repository's own `protocol.<name>.allow` would win over `protocol.allow`: each is refused again.
  protocol: [['allow', 'never']],
};

/** The one transport the service uses (the SSH executor's bundles, local files): never refused. */
export const KEPT_PROTOCOL = 'file';

export type NamedSection = keyof typeof NAMED_SECTION_SETTINGS;

export const isNamedSection = (section: string): section is NamedSection =>
  Object.hasOwn(NAMED_SECTION_SETTINGS, section);

/** The settings that empty every program of the named drivers and refuse every named transport but the kept one. */
export function namedSectionOverrides(sections: Iterable<readonly [NamedSection, string]>): [string, string][] {
  const pairs: [string, string][] = [];
  const seen = new Set<string>();
  for (const [kind, name] of sections) {
    if (kind === 'protocol' && name === KEPT_PROTOCOL) continue;
    if (seen.has(`${kind}\0${name}`)) continue;
    seen.add(`${kind}\0${name}`);
    for (const [key, value] of NAMED_SECTION_SETTINGS[kind]) pairs.push([`${kind}.${name}.${key}`, value]);
  }
  return pairs;
}

/** Command-line configuration as git reads it from its environment (git 2.31+): no value is parsed from a string. */
export function configEnvironment(pairs: readonly (readonly [string, string])[]): Record<string, string> {
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(pairs.length) };
  pairs.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

/**
 * The rest of the environment of the service's git: no system or global configuration file, no
 * attributes of the system, no terminal prompt, and the fixed identity of the commits the service
 * itself writes (saved work). A program-naming variable (GIT_SSH_COMMAND, GIT_PAGER, GIT_EDITOR,
 * GIT_ASKPASS, GIT_EXTERNAL_DIFF, GIT_PROXY_COMMAND) is never passed through.
 */
export const GIT_HARDENING_ENVIRONMENT: Readonly<Record<string, string>> = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_ATTR_NOSYSTEM: '1',
  GIT_TERMINAL_PROMPT: '0',
  GIT_PAGER: 'cat',
  GIT_EDITOR: ':',
  GIT_AUTHOR_NAME: 'task-workspaces',
  GIT_AUTHOR_EMAIL: 'task-workspaces@localhost',
  GIT_COMMITTER_NAME: 'task-workspaces',
  GIT_COMMITTER_EMAIL: 'task-workspaces@localhost',
};
