/** The pure rules of a new workspace's preparation and the container executor's settings. */
import { describe, expect, it } from 'vitest';
import { parseContainerSettings } from '../../domain/agent-settings';
import { workspaceKindOf } from '../../domain/admission';
import {
  copyPatternMatches,
  copyPatternMayEnter,
  copyPatternProblem,
  setupProblem,
  setupStatusOf,
} from '../../domain/workspace-setup';

describe('copyFiles patterns', () => {
  it('match paths from the top: * within a folder name, ** across folders', () => {
    expect(copyPatternMatches('.env', '.env')).toBe(true);
    expect(copyPatternMatches('.env', 'sub/.env')).toBe(false);
    expect(copyPatternMatches('config/local.*.json', 'config/local.dev.json')).toBe(true);
    expect(copyPatternMatches('config/local.*.json', 'config/other.json')).toBe(false);
    expect(copyPatternMatches('config/local.*.json', 'config/x/local.dev.json')).toBe(false);
    expect(copyPatternMatches('**/.env.local', '.env.local')).toBe(true);
    expect(copyPatternMatches('**/.env.local', 'a/b/.env.local')).toBe(true);
    expect(copyPatternMatches('a.b', 'aXb')).toBe(false); // a dot is a dot
  });

  it('let the walk into a folder only where a match may be below it', () => {
    expect(copyPatternMayEnter('config/local.*.json', 'config')).toBe(true);
    expect(copyPatternMayEnter('config/local.*.json', 'node_modules')).toBe(false);
    expect(copyPatternMayEnter('.env', 'config')).toBe(false);
    expect(copyPatternMayEnter('**/.env', 'deep')).toBe(true);
    expect(copyPatternMayEnter('config/local.*.json', 'config/sub')).toBe(false);
  });

  it('refuse what climbs out, starts at the root, names .git or copies everything', () => {
    for (const bad of ['../x', 'a/../b', '/etc/passwd', 'a//b', 'a/', '.git/config', '**', '*', '**/*', ''])
      expect(copyPatternProblem(bad), bad).not.toBeNull();
    for (const good of ['.env', 'config/local.*.json', '**/.env.local']) expect(copyPatternProblem(good)).toBeNull();
  });
});

describe('a setup', () => {
  it('is an argv with a command first, within its limits', () => {
    expect(setupProblem([])).not.toBeNull();
    expect(setupProblem([''])).not.toBeNull();
    expect(setupProblem(['a\0b'])).not.toBeNull();
    expect(setupProblem(Array(101).fill('x'))).not.toBeNull();
    expect(setupProblem(['npm', 'ci'])).toBeNull();
  });

  it('succeeded only at exit 0; a time limit or no exit says so', () => {
    expect(setupStatusOf({ exitCode: 0, signal: null }, false).status).toBe('succeeded');
    expect(setupStatusOf({ exitCode: 3, signal: null }, false)).toEqual({
      status: 'failed',
      exitCode: 3,
      signal: null,
    });
    expect(setupStatusOf({ exitCode: null, signal: 'SIGKILL' }, false).status).toBe('failed');
    expect(setupStatusOf({ exitCode: null, signal: 'SIGTERM' }, true).status).toBe('timed_out');
    expect(setupStatusOf(null, false).status).toBe('not_started');
  });
});

describe('the container executor', () => {
  it('works in a worktree workspace', () => {
    expect(workspaceKindOf('container')).toBe('worktree');
    expect(workspaceKindOf('ssh')).toBe('ssh');
  });

  it('is off unless an engine is named; a bad setting is refused in one line', () => {
    expect(parseContainerSettings({}, '/d').engineSocket).toBeNull();
    expect(parseContainerSettings({ TWS_CONTAINER_ENGINE: 'off' }, '/d').engineSocket).toBeNull();
    expect(parseContainerSettings({ TWS_CONTAINER_ENGINE: 'unix:///run/p.sock' }, '/d').engineSocket).toBe(
      '/run/p.sock',
    );
    expect(parseContainerSettings({ TWS_CONTAINER_ENGINE: 'podman' }, '/d')).toMatchObject({
      engineSocket: '/d/podman.sock',
      managedPodman: true,
      image: 'tws-agent:bookworm',
    });
    expect(() => parseContainerSettings({ TWS_CONTAINER_ENGINE: 'tcp://x:2375' }, '/d')).toThrow(
      /TWS_CONTAINER_ENGINE/,
    );
    expect(() => parseContainerSettings({ TWS_CONTAINER_IMAGE: 'Bad Image' }, '/d')).toThrow(/TWS_CONTAINER_IMAGE/);
    expect(() => parseContainerSettings({ TWS_CONTAINER_NOFILE: '10' }, '/d')).toThrow(/TWS_CONTAINER_NOFILE/);
  });
});
