import { describe, expect, it } from 'vitest';
import { bubblewrapArgs, gitStoreBinds, nulSeparated, sandboxEnvironmentArgs } from '../../domain/sandbox';

describe('the agent sandbox layout', () => {
  it('hides the service folders (outer first), binds the workspace and home back, then the git folders in order, and starts in the workspace', () => {
    const args = bubblewrapArgs({
      workspace: '/d/w/task-1',
      gitBinds: [
        ['ro', '/r/.git'],
        ['rw', '/r/.git/objects'],
      ],
      hidden: ['/d/w', '/d', '/d/logs'],
      home: '/d/logs/t/s/home',
      readOnlyFiles: ['/d/logs/t/s/e.prompt'],
    });
    const joined = args.join(' ');
    expect(joined).toContain('--unshare-pid');
    // Its own user namespace with no capability and no way back to one, its own IPC and UTS.
    for (const flag of ['--unshare-user', '--disable-userns', '--cap-drop ALL', '--unshare-ipc', '--unshare-uts'])
      expect(joined).toContain(flag);
    expect(args.indexOf('--unshare-user')).toBeLessThan(args.indexOf('--disable-userns'));
    expect(joined).toContain('--ro-bind / /');
    expect(joined).toContain('--proc /proc');
    expect(args.indexOf('/d')).toBeLessThan(args.indexOf('/d/w'));
    expect(joined).toContain('--tmpfs /d --tmpfs /d/w --tmpfs /d/logs');
    expect(joined).toContain(
      '--bind /d/w/task-1 /d/w/task-1 --bind /d/logs/t/s/home /d/logs/t/s/home --ro-bind-try /r/.git /r/.git --bind-try /r/.git/objects /r/.git/objects --ro-bind /d/logs/t/s/e.prompt /d/logs/t/s/e.prompt',
    );
    expect(args.slice(-2)).toEqual(['--chdir', '/d/w/task-1']);
    // Every bind comes after every hiding mount: nothing hidden covers what is given back.
    const lastTmpfs = args.lastIndexOf('--tmpfs');
    expect(args.indexOf('--bind')).toBeGreaterThan(lastTmpfs);
  });
});

describe('a repository git folder in the sandbox', () => {
  const entries = ['HEAD', 'config', 'hooks', 'info', 'objects', 'refs', 'logs', 'worktrees', 'packed-refs'];

  it('outside the workspace: read-only as a whole, then the task store over objects (the real ones read-only inside it), its own ref folder and its own admin folders', () => {
    const store = {
      commonDir: '/r/.git',
      insideWorkspace: false,
      entries,
      ownAdminDirs: ['/r/.git/worktrees/a'],
      objectStore: '/d/agent-objects/k/store',
      ownRefFolders: ['refs/heads/tws/t1'],
    };
    expect(gitStoreBinds(store)).toEqual([
      ['ro', '/r/.git'],
      ['rw', '/r/.git/objects', '/d/agent-objects/k/store'],
      ['ro', '/r/.git/objects/tws-base', '/r/.git/objects'],
      ['rw', '/r/.git/refs/heads/tws/t1'],
      ['rw', '/r/.git/logs/refs/heads/tws/t1'],
      ['rw', '/r/.git/worktrees/a'],
    ]);
    // No store (objects reached through a link) and no task branch: nothing of objects or refs is writable.
    expect(gitStoreBinds({ ...store, objectStore: null, ownRefFolders: [] })).toEqual([
      ['ro', '/r/.git'],
      ['rw', '/r/.git/worktrees/a'],
    ]);
    // The host path is bound at the sandbox path.
    const args = bubblewrapArgs({
      workspace: '/w',
      gitBinds: gitStoreBinds(store),
      hidden: [],
      home: '/h',
      readOnlyFiles: [],
    }).join(' ');
    expect(args).toContain(
      '--bind-try /d/agent-objects/k/store /r/.git/objects --ro-bind-try /r/.git/objects /r/.git/objects/tws-base',
    );
  });

  it('inside the workspace (local): pinned in place, and everything that steers git read-only over it', () => {
    expect(
      gitStoreBinds({
        commonDir: '/w/.git',
        insideWorkspace: true,
        entries,
        ownAdminDirs: [],
        objectStore: null,
        ownRefFolders: [],
      }),
    ).toEqual([
      ['rw', '/w/.git'],
      ['ro', '/w/.git/config'],
      ['ro', '/w/.git/hooks'],
      ['ro', '/w/.git/info'],
      ['ro', '/w/.git/worktrees'],
      ['ro', '/w/.git/packed-refs'],
    ]);
  });
  it('the agent’s variables are bubblewrap’s own arguments, read from a descriptor: cleared first, NUL-separated, a NUL refused', () => {
    const args = sandboxEnvironmentArgs({ PATH: '/a:/b', LD_PRELOAD: '/w/x.so' });
    expect(args).toEqual(['--clearenv', '--setenv', 'PATH', '/a:/b', '--setenv', 'LD_PRELOAD', '/w/x.so']);
    expect(nulSeparated(['--setenv', 'A', 'b c'])).toBe('--setenv\0A\0b c\0');
    expect(() => nulSeparated(['--setenv', 'A', 'b\0--bind'])).toThrow(/NUL/);
  });
  it('pins the worktrees and binds every pointer read-only after them', () => {
    const args = bubblewrapArgs({
      workspace: '/w/t',
      gitBinds: [['rw', '/r/.git/worktrees/a']],
      hidden: [],
      home: '/h',
      pinnedFolders: ['/w/t/a'],
      pointers: ['/w/t/a/.git', '/r/.git/worktrees/a/gitdir'],
      readOnlyFiles: [],
    });
    const joined = args.join(' ');
    expect(joined).toContain('--bind /w/t/a /w/t/a');
    expect(joined.indexOf('--bind /w/t/a /w/t/a')).toBeLessThan(joined.indexOf('--ro-bind-try /w/t/a/.git'));
    expect(joined.indexOf('--bind-try /r/.git/worktrees/a')).toBeLessThan(
      joined.indexOf('--ro-bind-try /r/.git/worktrees/a/gitdir'),
    );
  });
});
