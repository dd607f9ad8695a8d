import { describe, expect, it } from 'vitest';
import { bubblewrapArgs } from '../../domain/sandbox';

describe('the agent sandbox layout (issue 11)', () => {
  it('hides the service folders (outer first), binds the workspace and home back, tries the git folders, and starts in the workspace', () => {
    const args = bubblewrapArgs({ workspace: '/d/w/task-1', writable: ['/r/.git', '/d/w/task-1'], hidden: ['/d/w', '/d', '/d/logs'], home: '/d/logs/t/s/home', readOnlyFiles: ['/d/logs/t/s/e.prompt'] });
    const joined = args.join(' ');
    expect(joined).toContain('--unshare-pid');
    expect(joined).toContain('--ro-bind / /');
    expect(joined).toContain('--proc /proc');
    expect(args.indexOf('/d')).toBeLessThan(args.indexOf('/d/w'));
    expect(joined).toContain('--tmpfs /d --tmpfs /d/w --tmpfs /d/logs');
    expect(joined).toContain('--bind /d/w/task-1 /d/w/task-1 --bind /d/logs/t/s/home /d/logs/t/s/home --bind-try /r/.git /r/.git --ro-bind /d/logs/t/s/e.prompt /d/logs/t/s/e.prompt');
    expect(args.slice(-2)).toEqual(['--chdir', '/d/w/task-1']);
    // Every bind comes after every hiding mount: nothing hidden covers what is given back.
    const lastTmpfs = args.lastIndexOf('--tmpfs');
    expect(args.indexOf('--bind')).toBeGreaterThan(lastTmpfs);
  });
});
