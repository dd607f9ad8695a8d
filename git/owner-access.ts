/**
 * The repository stays its owner's [R9.1]. The service runs as root and its agents as uids of their
 * own, and both add to a person's `.git`: objects and their fan-out folders, the task branches'
 * ref and reflog folders, saved work under `refs/task-workspaces/`, worktree registrations. Each of
 * those would belong to root or to an agent's uid, and the owner's own git would then fail to add
 * an object ("insufficient permission"), to pack or delete a ref ("cannot lock ref"), or to prune.
 *
 * So the owner is given, once per repository, a POSIX access ACL on everything under its common
 * git dir that is not theirs already, and a default ACL on every folder of it: whatever root or an agent makes there later,
 * whoever makes it, is the owner's to write as well, with no step of the service having to
 * remember it (a merge or a restore tomorrow included). Nothing is given to anyone else: the
 * entries name the owner only, and an agent's sandbox binds the common dir read-only but for its
 * own folders, as before.
 *
 * The system's setfacl by absolute path, walking physically (`-P`: a link is never followed).
 * Once done, a default entry on the common dir says so, and that is all a later check reads.
 */
import { execFile } from 'node:child_process';
import { lstat } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SETFACL = ['/usr/bin/setfacl', '/bin/setfacl'];
const GETFACL = ['/usr/bin/getfacl', '/bin/getfacl'];

/** Common dirs already opened to their owner in this process (the ACL persists on disk). */
const opened = new Set<string>();

export type OwnerAccess = 'own' | 'opened' | 'unsupported';

async function firstWorking<T>(binaries: string[], use: (binary: string) => Promise<T>): Promise<T> {
  let last: unknown = new Error('not installed');
  for (const binary of binaries) {
    try {
      return await use(binary);
    } catch (err) {
      last = err;
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  throw last;
}

/** Whether the common dir already carries the owner's default entry (a former opening). */
async function carriesDefault(commonDir: string, uid: number): Promise<boolean> {
  const { stdout } = await firstWorking(GETFACL, (getfacl) =>
    run(getfacl, ['--numeric', '--omit-header', '--physical', '--', commonDir], { env: { PATH: '/usr/bin:/bin' } }),
  );
  return stdout.split('\n').some((line) => line.trim() === `default:user:${uid}:rwx`);
}

/**
 * Opens a repository's common git dir to its owner, as said above. `own`: the owner is this
 * process's own user, nothing to do; `opened`: done (now or before); `unsupported`: this process
 * cannot (not root, no setfacl, a filesystem without ACLs), the owner's git may then meet folders
 * it cannot write, and the caller says so.
 */
export async function openToOwner(commonDir: string): Promise<OwnerAccess> {
  const st = await lstat(commonDir).catch(() => null);
  if (!st?.isDirectory()) return 'unsupported';
  const self = process.getuid?.() ?? 0;
  if (st.uid === self) return 'own';
  if (self !== 0) return 'unsupported';
  if (opened.has(commonDir)) return 'opened';
  try {
    if (!(await carriesDefault(commonDir, st.uid))) {
      // Default entries on every folder; access entries only on what is not the owner's already
      // (their own files keep their modes as they were). The common dir itself last, so that its
      // default entry says the whole was done. find walks physically: a link is never followed.
      const find = (args: string[]) =>
        run('/usr/bin/find', [commonDir, ...args], { env: { PATH: '/usr/bin:/bin' }, maxBuffer: 1024 * 1024 });
      const setfacl = await firstWorking(SETFACL, async (binary) => (await lstat(binary), binary));
      await find([
        '-mindepth',
        '1',
        '!',
        '-user',
        String(st.uid),
        '!',
        '-type',
        'l',
        '-exec',
        setfacl,
        '-P',
        '-m',
        `u:${st.uid}:rwX`,
        '{}',
        '+',
      ]);
      await find(['-mindepth', '1', '-type', 'd', '-exec', setfacl, '-P', '-m', `d:u:${st.uid}:rwx`, '{}', '+']);
      await run(setfacl, ['-P', '-m', `d:u:${st.uid}:rwx`, '--', commonDir], { env: { PATH: '/usr/bin:/bin' } });
    }
  } catch {
    return 'unsupported';
  }
  opened.add(commonDir);
  return 'opened';
}
