/**
 * Which ignored files a release may leave out of a save because they are rebuilt, not written:
 * dependency folders, build output, caches. Everything else ignored (a hand-written `.env`, a
 * local config file) is saved with the rest of the work and restored, so an idle release
 * discards nothing anyone wrote [R6.9]. Per repository (registration, PATCH); `null` is the
 * default list below.
 *
 * A pattern is matched against what `git ls-files --others --ignored --directory` lists (a path
 * from the worktree's top, a folder with a trailing `/`):
 * - `name/`: a folder of that name at any depth (`node_modules/`, `.venv/`);
 * - a pattern without `/`: a file or folder name at any depth, `*` any characters (`*.pyc`);
 * - a pattern with `/` inside: the path from the top, `*` within one segment, `**` across several.
 */
export const DEFAULT_REBUILDABLE: readonly string[] = [
  'node_modules/',
  '.venv/',
  'venv/',
  '__pycache__/',
  '*.pyc',
  '.tox/',
  '.mypy_cache/',
  '.pytest_cache/',
  'target/',
  'build/',
  'dist/',
  'out/',
  '.next/',
  '.nuxt/',
  '.gradle/',
  '.cache/',
  'coverage/',
  '.turbo/',
];

/** At most this many patterns a repository, each at most this long. */
export const REBUILDABLE_LIMITS = { patterns: 100, length: 200 } as const;

/** Why a pattern cannot be one (null when it can). */
export function rebuildablePatternProblem(pattern: string): string | null {
  if (pattern.length === 0 || pattern.length > REBUILDABLE_LIMITS.length)
    return `must be 1 to ${REBUILDABLE_LIMITS.length} characters`;
  if (pattern.startsWith('/')) return 'is relative to the worktree: no leading "/"';
  if (pattern.split('/').includes('..')) return 'may not contain ".."';
  if (/[\0-\x1f\\[\]?!{}]/.test(pattern)) return 'may use letters, digits, "/", "." , "-", "_", "*" and spaces only';
  if (pattern === '/' || pattern === '*' || pattern === '**' || pattern === '**/') return 'would leave everything out';
  return null;
}

const escape = (s: string) => s.replace(/[.+^$()|]/g, '\\$&');

function pathPattern(pattern: string): RegExp {
  const body = pattern
    .split('/')
    .map((segment) => (segment === '**' ? '.*' : escape(segment).replace(/\*/g, '[^/]*')))
    .join('/')
    .replace(/\.\*\//g, '(?:.*/)?');
  return new RegExp(`^${body}$`);
}

/** Whether a listed entry (a path, a folder with a trailing `/`) is rebuildable by these patterns. */
export function isRebuildable(entry: string, patterns: readonly string[]): boolean {
  const isFolder = entry.endsWith('/');
  const trimmed = isFolder ? entry.slice(0, -1) : entry;
  const segments = trimmed.split('/');
  for (const pattern of patterns) {
    if (pattern.endsWith('/') && !pattern.slice(0, -1).includes('/')) {
      // A folder of that name at any depth: the entry is it, or inside it.
      const name = new RegExp(`^${escape(pattern.slice(0, -1)).replace(/\*/g, '[^/]*')}$`);
      const inside = segments.slice(0, isFolder ? segments.length : segments.length - 1);
      if (inside.some((s) => name.test(s))) return true;
    } else if (!pattern.includes('/')) {
      const name = new RegExp(`^${escape(pattern).replace(/\*/g, '[^/]*')}$`);
      if (segments.some((s) => name.test(s))) return true;
    } else {
      const re = pathPattern(pattern.replace(/\/$/, ''));
      // The entry, or a folder above it, matches.
      for (let i = segments.length; i > 0; i--) if (re.test(segments.slice(0, i).join('/'))) return true;
    }
  }
  return false;
}

/** The ignored entries a save takes (everything not rebuildable), and those it leaves out, with why. */
export function splitIgnored(
  entries: string[],
  patterns: readonly string[],
): { saved: string[]; leftOut: { path: string; reason: 'rebuildable' }[] } {
  const saved: string[] = [];
  const leftOut: { path: string; reason: 'rebuildable' }[] = [];
  for (const entry of entries) {
    if (isRebuildable(entry, patterns)) leftOut.push({ path: entry, reason: 'rebuildable' });
    else saved.push(entry);
  }
  return { saved, leftOut };
}
