/**
 * The drivers (filter, diff, merge) a repository's own config files define, so that the service's
 * git empties each of them (domain/git-hardening.ts): git has no switch that turns every filter
 * off, and a committed `.gitattributes` can select any driver the config defines.
 *
 * Read by this process, not by git (a git process per command would double the service's git
 * processes): the repository is found as git finds it (`.git` folder or file upwards, then
 * `commondir`), its `config` and both `config.worktree` files are parsed as git's config.c parses
 * them, and every `include.path` and `includeIf.*.path` is followed whatever its condition (more
 * drivers emptied than git would use is harmless). Cached by each file's identity and mtime.
 * A file git could not parse either is refused (GitConfigUnreadable): the command does not run.
 */
import { readFileSync, statSync, type Stats } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isNamedSection, type NamedSection } from '../domain/git-hardening';

class GitConfigUnreadable extends Error {
  constructor(reason: string) {
    super(`a repository config file cannot be read safely: ${reason}`);
    this.name = 'GitConfigUnreadable';
  }
}

const MAX_INCLUDE_DEPTH = 10; // git's own limit

/** Only a path that is not there reads as absent; one that cannot be examined stops the command (fail closed). */
const statOrNull = (p: string): Stats | null => {
  try {
    return statSync(p);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw new GitConfigUnreadable('a repository file cannot be examined');
  }
};

const isGitDirectory = (dir: string): boolean =>
  statOrNull(path.join(dir, 'HEAD'))?.isFile() === true &&
  (statOrNull(path.join(dir, 'objects'))?.isDirectory() === true ||
    statOrNull(path.join(dir, 'commondir'))?.isFile() === true);

/** The git dir and common dir git would use for `dir` (discovery upwards), or null outside any repository. */
function discoverRepository(dir: string): { gitDir: string; commonDir: string } | null {
  let current = path.resolve(dir);
  for (;;) {
    const dotGit = path.join(current, '.git');
    const st = statOrNull(dotGit);
    let gitDir: string | null = null;
    if (st?.isDirectory()) gitDir = dotGit;
    else if (st?.isFile()) {
      const match = /^gitdir: (.*)$/m.exec(readFileSync(dotGit, 'utf8'));
      if (match) gitDir = path.resolve(current, match[1]!.trim());
    } else if (isGitDirectory(current)) gitDir = current;
    if (gitDir) {
      let commonDir = gitDir;
      try {
        commonDir = path.resolve(gitDir, readFileSync(path.join(gitDir, 'commondir'), 'utf8').trim());
      } catch {
        // no commondir file: the git dir is the common dir
      }
      return { gitDir, commonDir };
    }
    const parent = path.dirname(current);
    if (parent === current) return null;
    current = parent;
  }
}

interface ParsedConfig {
  drivers: [NamedSection, string][];
  includes: string[];
}

/** Parses one config file's text as git's config.c does: section headers, keys, values, includes. */
export function parseConfig(text: string): ParsedConfig {
  const drivers: [NamedSection, string][] = [];
  const includes: string[] = [];
  let section = '';
  let subsection: string | null = null;
  let i = 0;
  const at = () => text[i];
  const fail = (what: string): never => {
    throw new GitConfigUnreadable(`${what} at offset ${i}`);
  };
  const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v';
  const isNameChar = (c: string | undefined) => c !== undefined && /[A-Za-z0-9-]/.test(c);
  if (text.startsWith('\ufeff')) i = 1;
  while (i < text.length) {
    const c = at();
    if (c === '\n' || isSpace(c)) {
      i++;
      continue;
    }
    if (c === '#' || c === ';') {
      while (i < text.length && at() !== '\n') i++;
      continue;
    }
    if (c === '[') {
      i++;
      let name = '';
      while (i < text.length && (isNameChar(at()) || at() === '.')) name += text[i++];
      subsection = null;
      if (isSpace(at())) {
        while (isSpace(at())) i++;
        if (at() !== '"') fail('bad section header');
        i++;
        let sub = '';
        while (i < text.length && at() !== '"') {
          if (at() === '\n') fail('bad section header');
          if (at() === '\\') i++;
          if (i >= text.length || at() === '\n') fail('bad section header');
          sub += text[i++];
        }
        if (at() !== '"') fail('bad section header');
        i++;
        subsection = sub;
      }
      if (at() !== ']' || name.length === 0) fail('bad section header');
      i++;
      const dot = name.indexOf('.');
      // `[section.sub]`: the old syntax, its subsection folded to lower case.
      if (subsection === null && dot >= 0) {
        subsection = name.slice(dot + 1).toLowerCase();
        name = name.slice(0, dot);
      }
      section = name.toLowerCase();
      if (isNamedSection(section) && subsection !== null) drivers.push([section, subsection]);
      continue;
    }
    if (!/[A-Za-z]/.test(c!)) fail('bad config line');
    let key = '';
    while (isNameChar(at())) key += text[i++];
    while (isSpace(at())) i++;
    let value: string | null = null;
    if (at() === '=') {
      i++;
      value = parseValue();
    } else if (at() === '\n' || at() === undefined || at() === '#' || at() === ';') {
      value = null;
      while (i < text.length && at() !== '\n') i++;
    } else fail('bad config line');
    if (section === '') fail('key outside a section');
    if (key.toLowerCase() === 'path' && value !== null && (section === 'include' || section === 'includeif'))
      includes.push(value);
  }
  return { drivers, includes };

  function parseValue(): string {
    let value = '';
    let quoted = false;
    let pendingSpace = '';
    while (isSpace(at())) i++;
    for (;;) {
      const c = at();
      if (c === undefined) {
        if (quoted) fail('unterminated quote');
        return value;
      }
      if (c === '\n') {
        if (quoted) fail('unterminated quote');
        i++;
        return value;
      }
      if (!quoted && (c === '#' || c === ';')) {
        while (i < text.length && at() !== '\n') i++;
        return value;
      }
      i++;
      if (!quoted && isSpace(c)) {
        pendingSpace += c;
        continue;
      }
      if (pendingSpace) {
        value += pendingSpace;
        pendingSpace = '';
      }
      if (c === '\\') {
        const next = at();
        i++;
        if (next === '\n') continue; // a continued line
        if (next === '\r' && at() === '\n') {
          i++;
          continue;
        }
        const escapes: Record<string, string> = { '"': '"', '\\': '\\', n: '\n', t: '\t', b: '\b' };
        if (next === undefined || escapes[next] === undefined) fail('bad escape');
        value += escapes[next!];
        continue;
      }
      if (c === '"') {
        quoted = !quoted;
        continue;
      }
      value += c;
    }
  }
}

const cache = new Map<string, { key: string; parsed: ParsedConfig }>();

function parsedFile(file: string): ParsedConfig | null {
  const st = statOrNull(file);
  if (!st) return null; // git ignores a config or an include that is not there
  if (!st.isFile()) throw new GitConfigUnreadable('not a regular file');
  const key = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  const hit = cache.get(file);
  if (hit?.key === key) return hit.parsed;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new GitConfigUnreadable('unreadable');
  }
  const parsed = parseConfig(text);
  cache.set(file, { key, parsed });
  return parsed;
}

function includedPath(value: string, from: string): string {
  if (value.startsWith('~/')) return path.join(process.env.HOME ?? os.homedir(), value.slice(2));
  return path.resolve(path.dirname(from), value);
}

/** Every driver the config files of the repository at `dir` (or the one named exactly) define, includes followed. */
export function repositoryNamedSections(
  dir: string,
  named: { gitDir: string; commonDir: string } | null = null,
): [NamedSection, string][] {
  const repository = named ?? discoverRepository(dir);
  if (!repository) return [];
  const roots = [
    ...new Set([
      path.join(repository.commonDir, 'config'),
      path.join(repository.commonDir, 'config.worktree'),
      path.join(repository.gitDir, 'config.worktree'),
    ]),
  ];
  const drivers: [NamedSection, string][] = [];
  const visit = (file: string, depth: number) => {
    if (depth > MAX_INCLUDE_DEPTH) throw new GitConfigUnreadable('includes nested too deeply');
    const parsed = parsedFile(file);
    if (!parsed) return;
    drivers.push(...parsed.drivers);
    for (const include of parsed.includes) visit(includedPath(include, file), depth + 1);
  };
  for (const root of roots) visit(root, 0);
  return drivers;
}
