/**
 * A task's patch (git's unified diff, as GET /v1/tasks/:id/diff?patch=1 gives it) cut into its
 * files, each named by its real path, so the diff view can find a file of the API's list in it.
 * git quotes a name that holds a `"`, a backslash, a control character (a tab, a newline) or, with
 * core.quotePath, a byte past ASCII: `diff --git "a/\"x\"" "b/\"x\""`, `+++ "b/na\303\257ve.md"`;
 * and it ends a `---`/`+++` name that holds a space with a tab. react-diff-view's parser
 * (gitdiff-parser) reads such names verbatim, quotes and escapes included, so a file named so was
 * never found by its path and showed nothing. The names are read here the way git writes them
 * (its quote.c, C-style); the hunks are still parsed by react-diff-view, one file at a time.
 */

export interface PatchSection {
  /** The path before (null: none, an added file). */
  oldPath: string | null;
  /** The path after (null: none, a deleted file). */
  newPath: string | null;
  /** The path the API's file list names the file by: its new path, a deleted file's old one; null: its header could not be read. */
  path: string | null;
  /** The section's text, its `diff --git` line to the next one. */
  text: string;
}

const ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, '\\': 92 };

/**
 * The C-style quoted name that starts at `from` (on its `"`): its text (its bytes read as UTF-8)
 * and where it ends (just past its closing `"`); null when it is not one (unclosed, a bad escape).
 */
function quotedAt(line: string, from: number): { name: string; end: number } | null {
  if (line[from] !== '"') return null;
  const bytes: number[] = [];
  const encoder = new TextEncoder();
  for (let i = from + 1; i < line.length; i++) {
    const c = line[i]!;
    if (c === '"') return { name: new TextDecoder().decode(new Uint8Array(bytes)), end: i + 1 };
    if (c !== '\\') {
      // A character as it is (a code point, surrogate pairs kept together).
      const point = line.codePointAt(i)!;
      bytes.push(...encoder.encode(String.fromCodePoint(point)));
      if (point > 0xffff) i++;
      continue;
    }
    const next = line[++i];
    if (next === undefined) return null;
    if (next in ESCAPES) bytes.push(ESCAPES[next]!);
    else if (/^[0-3][0-7][0-7]$/.test(line.slice(i, i + 3))) {
      bytes.push(parseInt(line.slice(i, i + 3), 8));
      i += 2;
    } else return null;
  }
  return null;
}

/** A whole name as git writes it in a header line: quoted, or as it is. */
export function unquoteGitName(text: string): string | null {
  if (!text.startsWith('"')) return text;
  const quoted = quotedAt(text, 0);
  return quoted && quoted.end === text.length ? quoted.name : null;
}

/** `a/x` without its side's prefix; undefined when it has not got it. */
const withoutPrefix = (name: string | null, prefix: string): string | undefined =>
  name !== null && name.startsWith(prefix) ? name.slice(prefix.length) : undefined;

/** A `---`/`+++` line's name: null for /dev/null, undefined when unreadable. git ends a name with a space with a tab. */
function sideName(rest: string, prefix: string): string | null | undefined {
  const text = rest.endsWith('\t') ? rest.slice(0, -1) : rest;
  if (text === '/dev/null') return null;
  return withoutPrefix(unquoteGitName(text), prefix);
}

/** The two names of `diff --git <a> <b>` (each quoted or not); undefined when they cannot be told apart. */
function gitLineNames(rest: string): { old: string; new: string } | undefined {
  let a: string | null = null;
  let b: string | null = null;
  if (rest.startsWith('"')) {
    const first = quotedAt(rest, 0);
    if (!first || rest[first.end] !== ' ') return undefined;
    a = first.name;
    b = unquoteGitName(rest.slice(first.end + 1));
  } else if (rest.endsWith('"')) {
    for (let at = rest.indexOf(' "'); at >= 0 && b === null; at = rest.indexOf(' "', at + 1)) {
      const second = quotedAt(rest, at + 1);
      if (second?.end === rest.length) [a, b] = [rest.slice(0, at), second.name];
    }
  } else if ((rest.length - 5) % 2 === 0) {
    // Both as they are, and (no rename line says otherwise) the same name: `a/<n> b/<n>`.
    const n = (rest.length - 5) / 2;
    if (rest.slice(2, 2 + n) === rest.slice(5 + n) && rest.slice(2 + n, 5 + n) === ' b/')
      [a, b] = [rest.slice(0, 2 + n), rest.slice(3 + n)];
  }
  const old = withoutPrefix(a, 'a/');
  const after = withoutPrefix(b, 'b/');
  return old !== undefined && after !== undefined ? { old, new: after } : undefined;
}

/** The names of one file's section, from its header lines (those before its first hunk). */
function namesOf(lines: string[]): { oldPath: string | null; newPath: string | null; readable: boolean } {
  const fromGitLine = gitLineNames(lines[0]!.slice('diff --git '.length));
  let oldPath: string | null | undefined = fromGitLine?.old;
  let newPath: string | null | undefined = fromGitLine?.new;
  for (const line of lines.slice(1)) {
    if (line.startsWith('@@') || line.startsWith('Binary files ') || line.startsWith('GIT binary patch')) break;
    if (line.startsWith('--- ')) oldPath = sideName(line.slice(4), 'a/');
    else if (line.startsWith('+++ ')) newPath = sideName(line.slice(4), 'b/');
    else if (/^(rename|copy) from /.test(line)) oldPath = unquoteGitName(line.replace(/^\S+ from /, '')) ?? undefined;
    else if (/^(rename|copy) to /.test(line)) newPath = unquoteGitName(line.replace(/^\S+ to /, '')) ?? undefined;
    else if (line.startsWith('new file mode ')) oldPath = null;
    else if (line.startsWith('deleted file mode ')) newPath = null;
  }
  return {
    oldPath: oldPath ?? null,
    newPath: newPath ?? null,
    readable: oldPath !== undefined && newPath !== undefined && (oldPath !== null || newPath !== null),
  };
}

/** The patch's files in order, each with its names and its own text (what came before the first file is no file's). */
export function splitPatch(patch: string): PatchSection[] {
  const lines = patch.split('\n');
  const starts = lines.flatMap((line, i) => (line.startsWith('diff --git ') ? [i] : []));
  return starts.map((start, k) => {
    const end = starts[k + 1] ?? lines.length;
    const own = lines.slice(start, end);
    const names = namesOf(own);
    return {
      oldPath: names.oldPath,
      newPath: names.newPath,
      path: names.readable ? (names.newPath ?? names.oldPath) : null,
      text: own.join('\n') + (end < lines.length ? '\n' : ''),
    };
  });
}

/** How many lines a section's hunks add or remove: what a parse of it must have found, or it is not shown as parsed. */
export function changedLineCount(section: string): number {
  const lines = section.split('\n');
  const first = lines.findIndex((line) => line.startsWith('@@'));
  if (first < 0) return 0;
  return lines.slice(first).filter((line) => line.startsWith('+') || line.startsWith('-')).length;
}
