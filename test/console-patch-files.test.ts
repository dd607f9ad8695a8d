/**
 * The console's reading of a patch's file names (console/src/patch-files.ts): every name git
 * quotes (a `"`, markup, a backslash, a tab, a newline, bytes past ASCII) or ends with a tab (a
 * space) read back as the file's real path, in patches real git wrote, with core.quotePath on and off.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseDiff } from 'react-diff-view';
import { partsByPath } from '../console/src/diff-parts';
import { changedLineCount, splitPatch, unquoteGitName } from '../console/src/patch-files';

const NAMES = [
  '"><script>alert(1)</script>.txt',
  'naïve–文件.md',
  'tab\there.txt',
  'back\\slash.txt',
  'with space.txt',
  'line\nbreak.txt',
  'emoji 😀.txt',
  'plain.txt',
];

const scratch = mkdtempSync(path.join(tmpdir(), 'tws-patch-files-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const gitIn = (dir: string, ...args: string[]): string =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir, encoding: 'utf8' });

/** A repository where each of NAMES is added (one line each), then changed, renamed and deleted. */
function repositoryOfNames(): string {
  const dir = mkdtempSync(path.join(scratch, 'r-'));
  gitIn(dir, 'init', '-q', '-b', 'main');
  gitIn(dir, 'commit', '-q', '--allow-empty', '-m', 'empty');
  for (const [i, name] of NAMES.entries()) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), `line of ${i}\n`);
  }
  writeFileSync(path.join(dir, 'empty "q".txt'), '');
  gitIn(dir, 'add', '-A');
  gitIn(dir, 'commit', '-q', '-m', 'added');
  writeFileSync(path.join(dir, NAMES[1]!), 'changed\n');
  gitIn(dir, 'mv', NAMES[4]!, 'moved é "there".txt');
  gitIn(dir, 'rm', '-q', NAMES[3]!);
  gitIn(dir, 'commit', '-q', '-am', 'changed');
  return dir;
}

describe("the console reads a patch's file names as git wrote them [console diff]", () => {
  it('unquotes C-style names: escapes, octal bytes as UTF-8; a bad quoting is not a name', () => {
    expect(unquoteGitName('"a/\\"><script>alert(1)</script>.txt"')).toBe('a/"><script>alert(1)</script>.txt');
    expect(unquoteGitName('"b/na\\303\\257ve\\342\\200\\223\\346\\226\\207\\344\\273\\266.md"')).toBe(
      'b/naïve–文件.md',
    );
    expect(unquoteGitName('"tab\\there\\\\x\\n"')).toBe('tab\there\\x\n');
    expect(unquoteGitName('plain name.txt')).toBe('plain name.txt');
    expect(unquoteGitName('"unclosed')).toBeNull();
    expect(unquoteGitName('"bad \\q escape"')).toBeNull();
    expect(unquoteGitName('"trailing" text')).toBeNull();
  });

  for (const quotePath of ['true', 'false'])
    it(`names every file of a real patch by its real path (core.quotePath=${quotePath})`, () => {
      const dir = repositoryOfNames();
      const patchOf = (from: string, to: string) =>
        gitIn(dir, '-c', `core.quotePath=${quotePath}`, 'diff', '--no-color', '-M', from, to);
      const added = splitPatch(patchOf('HEAD~2', 'HEAD~1'));
      expect(added.map((s) => s.path).sort()).toEqual([...NAMES, 'empty "q".txt'].sort());
      for (const section of added) {
        expect(section.oldPath).toBeNull();
        expect(section.text.startsWith('diff --git ')).toBe(true);
      }
      // Each section holds its own file's line, and only that one.
      for (const [i, name] of NAMES.entries()) {
        const own = added.find((s) => s.path === name)!;
        expect(own.text).toContain(`+line of ${i}\n`);
        expect(changedLineCount(own.text)).toBe(1);
      }
      expect(changedLineCount(added.find((s) => s.path === 'empty "q".txt')!.text)).toBe(0);

      const changed = splitPatch(patchOf('HEAD~1', 'HEAD'));
      expect(changed.map((s) => [s.oldPath, s.newPath, s.path])).toEqual(
        expect.arrayContaining([
          [NAMES[1], NAMES[1], NAMES[1]],
          [NAMES[4], 'moved é "there".txt', 'moved é "there".txt'],
          [NAMES[3], null, NAMES[3]],
        ]),
      );
      expect(changed).toHaveLength(3);
      // The sections, joined, are the patch.
      expect(changed.map((s) => s.text).join('')).toBe(patchOf('HEAD~1', 'HEAD'));
    });

  it("a header no name can be read from leaves the section nameless, never another file's", () => {
    const patch = [
      'diff --git "a/unclosed b/x',
      'new file mode 100644',
      '--- /dev/null',
      '+++ "b/unclosed',
      '@@ -0,0 +1 @@',
      '+text',
      'diff --git a/ok.txt b/ok.txt',
      '--- a/ok.txt',
      '+++ b/ok.txt',
      '@@ -1 +1 @@',
      '-old',
      '+new',
      '',
    ].join('\n');
    const sections = splitPatch(patch);
    expect(sections.map((s) => s.path)).toEqual([null, 'ok.txt']);
    expect(sections[0]!.text).toContain('+text');
    expect(changedLineCount(sections[1]!.text)).toBe(2);
    expect(splitPatch('')).toEqual([]);
  });
});

describe('the diff view shows a part its parser cannot read whole as text, never drops it [console diff]', () => {
  it('a real patch with quoted names: every part parsed, by its path, with its lines', () => {
    const dir = repositoryOfNames();
    const parts = partsByPath(gitIn(dir, 'diff', '--no-color', '-M', 'HEAD~2', 'HEAD~1'));
    for (const [i, name] of NAMES.entries()) {
      const [part, ...more] = parts.get(name)!;
      expect(more).toEqual([]);
      expect(part!.parsed?.hunks.flatMap((h) => h.changes.map((c) => [c.type, c.content]))).toEqual([
        ['insert', `line of ${i}`],
      ]);
    }
    expect(parts.get(null)).toBeUndefined();
  });

  it('parts the parser throws on (a bad hunk header, a `---` line with no end) or misreads are kept as text; the others parsed', () => {
    const whole = 'diff --git a/ok.txt b/ok.txt\n--- a/ok.txt\n+++ b/ok.txt\n@@ -1 +1 @@\n-old\n+new\n';
    const badHunk = 'diff --git a/bad.txt b/bad.txt\n--- a/bad.txt\n+++ b/bad.txt\n@@ bad @@\n+a\n';
    // An empty line where the parser stops reading headers: it then finds none of the changed lines.
    const misread = 'diff --git a/gap.txt b/gap.txt\n\n--- a/gap.txt\n+++ b/gap.txt\n@@ -1 +1 @@\n-a\n+b\n';
    const cut = 'diff --git a/cut.txt b/cut.txt\nindex 1..2 100644\n--- a/cut.txt';
    expect(() => parseDiff(badHunk)).toThrow();
    expect(() => parseDiff(cut)).toThrow();
    expect(() => parseDiff(whole + badHunk)).toThrow(); // read whole, one bad part takes the others with it
    const parts = partsByPath(whole + badHunk + misread + cut);
    expect(parts.get('ok.txt')![0]!.parsed?.hunks).toHaveLength(1);
    for (const [name, text] of [
      ['bad.txt', badHunk],
      ['gap.txt', misread],
      ['cut.txt', cut],
    ] as const)
      expect(parts.get(name)).toEqual([{ section: expect.objectContaining({ text }), parsed: null }]);
  });
});
