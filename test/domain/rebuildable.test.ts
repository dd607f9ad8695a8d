import { describe, expect, it } from 'vitest';
import { DEFAULT_REBUILDABLE, isRebuildable, rebuildablePatternProblem, splitIgnored } from '../../domain/rebuildable';

describe('rebuilt ignored files a release leaves out of its save [R6.9]', () => {
  it('the default list leaves out dependencies, build output and caches, at any depth, and keeps what a person wrote', () => {
    for (const rebuilt of [
      'node_modules/',
      'web/node_modules/',
      '.venv/',
      'pkg/__pycache__/',
      'a/b/c.pyc',
      'target/',
      'dist/',
    ])
      expect(isRebuildable(rebuilt, DEFAULT_REBUILDABLE), rebuilt).toBe(true);
    for (const written of [
      '.env',
      '.env.local',
      'config/local.json',
      'notes/todo.md',
      'build',
      'distance/',
      'my-target/',
    ])
      expect(isRebuildable(written, DEFAULT_REBUILDABLE), written).toBe(false);
  });

  it('a folder pattern, a name with *, and a path from the top with **', () => {
    expect(isRebuildable('out/x.bin', ['out/'])).toBe(true);
    expect(isRebuildable('out', ['out/'])).toBe(false); // a file of that name is not the folder
    expect(isRebuildable('logs/app.log', ['*.log'])).toBe(true);
    expect(isRebuildable('gen/a/b/', ['gen/**'])).toBe(true);
    expect(isRebuildable('src/gen/x.ts', ['gen/**'])).toBe(false);
    expect(isRebuildable('a/tmp/b/', ['**/tmp'])).toBe(true);
  });

  it('splits what a save takes from what it leaves out, saying why', () => {
    expect(splitIgnored(['.env', 'node_modules/', 'cfg/local.json'], DEFAULT_REBUILDABLE)).toEqual({
      saved: ['.env', 'cfg/local.json'],
      leftOut: [{ path: 'node_modules/', reason: 'rebuildable' }],
    });
  });

  it('refuses patterns that climb out, are absolute, leave everything out, or are empty', () => {
    for (const bad of ['', '/abs', '../x', 'a/../b', '*', '**', '/', 'x'.repeat(201), 'a[0]'])
      expect(rebuildablePatternProblem(bad), bad).not.toBeNull();
    for (const good of ['node_modules/', '*.pyc', 'gen/**', 'build output/'])
      expect(rebuildablePatternProblem(good), good).toBeNull();
  });
});
