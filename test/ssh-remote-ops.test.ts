/**
 * The remote operations of the ssh executor against a real OpenSSH server on this machine: the
 * "remote" is a folder here reached over SSH, so the tests read the world it leaves with plain
 * git and /proc. The host repository is a real one with commits, made in a temporary folder.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSshConnections, SshRefusal, type SshTarget } from '../ssh/connection';
import {
  bringBranchBack,
  removeRemoteClone,
  removeRemoteTaskFolderIfEmpty,
  saveRemoteWork,
} from '../ssh/remote-cleanup';
import {
  readRemoteExitStatus,
  readRemoteLog,
  remoteProcessAgeMs,
  remoteProcesses,
  startRemoteAgent,
  stopRemoteAgent,
} from '../ssh/remote-agent';
import { processAgeMs } from '../executors/host/process-identity';
import { AGENT_SCRIPTS } from '../ssh/agent-scripts';
import { RemoteOperationError } from '../ssh/remote-scripts';
import { WORKSPACE_SCRIPTS } from '../ssh/cleanup-scripts';
import { readRemoteGitStatus } from '../ssh/remote-git-status';
import { copyIntoRemoteClone } from '../ssh/remote-copy';
import { restoreRemoteWork } from '../ssh/remote-restore';
import { savedWorkPatches } from '../git/saved-work';
import {
  discardRemoteSlots,
  materializeRemoteSlot,
  readRemoteWorkspace,
  type RemoteSlotSpec,
} from '../ssh/remote-workspace';
import { startSshServer } from './support/ssh-server';
import { fingerprint, git, listDir, makeRepo, processAlive } from './support/world';
import { statusOf } from './support/work-of-every-kind';

let server: Awaited<ReturnType<typeof startSshServer>>;
let target: SshTarget;
let hostDir: string;
let host: string; // the host repository, with two commits on main
let root: string; // the remote workspace root

const markerOf = (taskId: string): string =>
  JSON.stringify({ kind: 'task-workspaces/ownership', taskId, environmentId: `env-${taskId}` }, null, 2) + '\n';
const folderOf = (taskId: string): string => path.join(root, `task-${taskId}`);
const slotOf = (taskId: string, over: Partial<RemoteSlotSpec> = {}): RemoteSlotSpec => ({
  repoPath: path.join(folderOf(taskId), 'app'),
  branch: `tws/${taskId}`,
  baseBranch: 'main',
  createBranch: true,
  sourcePath: host,
  ...over,
});

/** A task's clone on the remote, made through the public surface. */
async function launched(taskId: string, over: Partial<RemoteSlotSpec> = {}) {
  const slot = slotOf(taskId, over);
  const made = await materializeRemoteSlot(target, {
    taskFolder: folderOf(taskId),
    markerText: markerOf(taskId),
    slot,
  });
  return { slot, folder: folderOf(taskId), marker: markerOf(taskId), ...made };
}

async function reasonOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof RemoteOperationError) return err.reason;
    throw err;
  }
  return 'no error';
}

function procStat(pid: number): { pgrp: number; startTime: string } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { pgrp: Number(fields[2]), startTime: fields[19]! };
}

async function until<T>(read: () => Promise<T | null>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  server = await startSshServer();
  root = server.workspaceRoot;
  target = {
    id: 'remote-1',
    host: server.host,
    port: server.port,
    user: server.user,
    privateKeyPath: server.privateKeyPath,
    knownHosts: server.knownHostsLine,
    workspaceRoot: root,
  };
  hostDir = mkdtempSync(path.join(os.tmpdir(), 'tws-remote-ops-host-'));
  host = makeRepo(hostDir, 'app', { files: { 'README.md': '# app\n', 'src/main.txt': 'one\n' } });
  writeFileSync(path.join(host, 'src/main.txt'), 'two\n');
  git(host, 'commit', '-q', '-am', 'second');
});

afterAll(async () => {
  await closeSshConnections();
  await server?.remove();
  if (hostDir) rmSync(hostDir, { recursive: true, force: true });
});

describe('remote scripts', () => {
  it('carry no single quote (the transport refuses one)', () => {
    for (const [name, source] of Object.entries({ ...WORKSPACE_SCRIPTS, ...AGENT_SCRIPTS }))
      expect(source.includes("'"), name).toBe(false);
  });
});

describe('materializeRemoteSlot', () => {
  it('clones the host base into a new branch on the remote, with no origin, and writes the marker', async () => {
    const t = await launched('m1');
    expect(t).toMatchObject({ createdClone: true, createdBranch: true });
    expect(t.headCommit).toBe(git(host, 'rev-parse', 'main'));
    expect(git(t.slot.repoPath, 'symbolic-ref', '--short', 'HEAD')).toBe('tws/m1');
    expect(git(t.slot.repoPath, 'rev-parse', 'HEAD')).toBe(t.headCommit);
    expect(git(t.slot.repoPath, 'rev-parse', 'main')).toBe(t.headCommit);
    expect(git(t.slot.repoPath, 'remote')).toBe('');
    expect(git(t.slot.repoPath, 'status', '--porcelain')).toBe('');
    expect(readFileSync(path.join(t.folder, '.task-workspace.json'), 'utf8')).toBe(t.marker);
    expect(listDir(t.folder)).toEqual(['.task-workspace.json', 'app']); // the temporary clone folder is gone
    expect(git(host, 'for-each-ref', '--format=%(refname)', 'refs/heads/tws/')).toBe(''); // nothing was pushed to the host
  });

  it('adopts its own clone on a re-run, changing nothing', async () => {
    const t = await launched('m2');
    const before = fingerprint(t.folder);
    const again = await launched('m2');
    expect(again).toMatchObject({ createdClone: false, createdBranch: true, headCommit: t.headCommit });
    expect(fingerprint(t.folder)).toBe(before);
  });

  it('checks out a branch the host already has, as it is', async () => {
    git(host, 'branch', 'feature/x', 'main~1');
    const t = await launched('m3', { branch: 'feature/x', createBranch: false });
    expect(t).toMatchObject({ createdClone: true, createdBranch: false, headCommit: git(host, 'rev-parse', 'main~1') });
    expect(git(t.slot.repoPath, 'symbolic-ref', '--short', 'HEAD')).toBe('feature/x');
  });

  it('works on the base branch itself when asked to', async () => {
    const t = await launched('m7', { branch: 'main', createBranch: false });
    expect(t).toMatchObject({ createdClone: true, createdBranch: false, headCommit: git(host, 'rev-parse', 'main') });
    expect(git(t.slot.repoPath, 'for-each-ref', '--format=%(refname)', 'refs/')).toBe('refs/heads/main');
  });

  it('refuses a branch the host lacks when it may not create one, and a missing base, writing nothing', async () => {
    expect(await reasonOf(launched('m4', { branch: 'no-such-branch', createBranch: false }))).toBe('branch_missing');
    expect(await reasonOf(launched('m4', { baseBranch: 'no-such-base' }))).toBe('base_missing');
    expect(existsSync(folderOf('m4'))).toBe(false); // a refusal writes nothing: no folder, no marker
  });

  it('refuses a task folder marked by another task and changes nothing there', async () => {
    const folder = folderOf('m5');
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, '.task-workspace.json'), markerOf('someone-else'));
    const before = fingerprint(folder);
    const reason = await reasonOf(
      materializeRemoteSlot(target, { taskFolder: folder, markerText: markerOf('m5'), slot: slotOf('m5') }),
    );
    expect(reason).toBe('marker_other');
    expect(fingerprint(folder)).toBe(before);
    expect(listDir(folder)).toEqual(['.task-workspace.json']);
  });

  it('refuses an occupied repository path and leaves what is there', async () => {
    const repoPath = path.join(folderOf('m6'), 'app');
    mkdirSync(repoPath, { recursive: true });
    writeFileSync(path.join(repoPath, 'precious.txt'), 'mine\n');
    expect(await reasonOf(launched('m6'))).toBe('occupied');
    expect(readFileSync(path.join(repoPath, 'precious.txt'), 'utf8')).toBe('mine\n');
    expect(listDir(repoPath)).toEqual(['precious.txt']);
    expect(listDir(folderOf('m6'))).toEqual(['app']); // no marker claims a folder with someone else's files
  });
});

describe('readRemoteWorkspace', () => {
  it('reports the facts of good, symlinked, deleted, other-branch and dirty folders, changing nothing', async () => {
    const good = await launched('r1');
    const other = await launched('r2');
    git(other.slot.repoPath, 'checkout', '-q', '-b', 'elsewhere');
    const dirty = await launched('r3');
    writeFileSync(path.join(dirty.slot.repoPath, 'README.md'), 'changed\n');
    const linked = path.join(root, 'task-r4-link');
    symlinkSync(good.slot.repoPath, linked);
    const deleted = path.join(folderOf('r5'), 'app');
    // A tracked file whose stat changed: a status that refreshed the index would rewrite it.
    utimesSync(path.join(good.slot.repoPath, 'README.md'), new Date(), new Date(Date.now() + 5_000));
    const index = path.join(good.slot.repoPath, '.git/index');
    const indexBefore = statSync(index).mtimeMs;
    const printsBefore = [good, other, dirty].map((t) => fingerprint(t.folder));

    const facts = await readRemoteWorkspace(target, {
      taskFolder: good.folder,
      workspacePath: good.slot.repoPath,
      repoPaths: [good.slot.repoPath, linked, deleted, other.slot.repoPath, dirty.slot.repoPath],
      withDirty: true,
    });

    expect(facts.marker).toBe(good.marker);
    expect(facts.workspaceIsRealDirectory).toBe(true);
    const [g, l, d, o, x] = facts.slots;
    expect(g).toEqual({
      repoPath: good.slot.repoPath,
      exists: true,
      realDirectory: true,
      toplevel: good.slot.repoPath,
      branch: 'tws/r1',
      head: good.headCommit,
      dirty: 'clean',
    });
    expect(l).toMatchObject({ exists: true, realDirectory: false, toplevel: good.slot.repoPath });
    expect(d).toEqual({
      repoPath: deleted,
      exists: false,
      realDirectory: false,
      toplevel: null,
      branch: null,
      head: null,
      dirty: null,
    });
    expect(o).toMatchObject({ exists: true, realDirectory: true, branch: 'elsewhere' });
    expect(x).toMatchObject({ exists: true, realDirectory: true, branch: 'tws/r3', dirty: 'dirty' });

    expect(statSync(index).mtimeMs).toBe(indexBefore);
    expect([good, other, dirty].map((t) => fingerprint(t.folder))).toEqual(printsBefore);
    expect(git(dirty.slot.repoPath, 'status', '--porcelain')).toBe('M README.md');

    const inside = path.join(good.slot.repoPath, 'src');
    const [sub] = (
      await readRemoteWorkspace(target, {
        taskFolder: good.folder,
        workspacePath: inside,
        repoPaths: [inside],
        withDirty: true,
      })
    ).slots;
    expect(sub).toMatchObject({ exists: true, realDirectory: true, toplevel: good.slot.repoPath, dirty: 'unreadable' }); // not a top level: doubt

    const bare = await readRemoteWorkspace(target, {
      taskFolder: folderOf('r6'),
      workspacePath: linked,
      repoPaths: [good.slot.repoPath],
      withDirty: false,
    });
    expect(bare).toMatchObject({
      marker: null,
      workspaceIsRealDirectory: false,
      slots: [{ exists: true, dirty: null }],
    });
    expect(await readRemoteGitStatus(target, { repoPath: dirty.slot.repoPath, baseBranch: 'main' })).toMatchObject({
      branch: 'tws/r3',
      files: [{ path: 'README.md', status: ' M' }],
    });
  });
});

describe('remote agent', () => {
  it('starts the agent detached in its own group, in its workspace, logging its output', async () => {
    const t = await launched('a1');
    const logPath = path.join(root, 'logs/a1/agent.log');
    const started = await startRemoteAgent(target, {
      cwd: t.slot.repoPath,
      logPath,
      statusPath: path.join(root, 'logs/a1/agent.exit'),
      env: { TWS_GREETING: 'hello from the agent' },
      argv: ['bash', '-c', 'echo "$TWS_GREETING"; exec sleep 30'],
    });
    if ('notStartable' in started) throw new Error('not startable');
    try {
      expect(procStat(started.pid)).toEqual({ pgrp: started.pid, startTime: started.startTime });
      expect(readFileSync(`/proc/${started.pid}/cmdline`, 'utf8')).not.toContain('hello from the agent'); // env values are no one's to read in ps
      expect(await remoteProcesses(target, [started, { pid: started.pid, startTime: '1' }])).toEqual([
        { alive: true, cwd: t.slot.repoPath },
        { alive: false, cwd: null },
      ]);
      // Its age as the target reads it (an adopted setup keeps only what is left of its limit):
      // the same machine here, so the same as the host's own reading of it.
      const [remoteAge, hostAge] = await Promise.all([
        remoteProcessAgeMs(target, started),
        processAgeMs(started.startTime),
      ]);
      expect(remoteAge).not.toBeNull();
      expect(Math.abs(remoteAge! - hostAge!)).toBeLessThan(1000);
      expect(await remoteProcessAgeMs(target, { pid: started.pid, startTime: '1' })).toBeNull();
      const log = await until(async () => {
        const bytes = await readRemoteLog(target, { logPath, offset: 0, maxBytes: 1000 });
        return bytes.length > 0 ? bytes.toString('utf8') : null;
      });
      expect(log).toBe('hello from the agent\n');
      expect((await readRemoteLog(target, { logPath, offset: 6, maxBytes: 4 })).toString()).toBe('from');
      expect(await readRemoteExitStatus(target, path.join(root, 'logs/a1/agent.exit'))).toBeNull();
    } finally {
      await stopRemoteAgent(target, { ...started, graceMs: 2000 });
    }
  });

  it("applies the limits the target allows (ulimit: data and anonymous mappings, its user's processes) and says so in the log", async () => {
    const t = await launched('a-limits');
    const statusPath = path.join(root, 'logs/a-limits/agent.exit');
    const logPath = path.join(root, 'logs/a-limits/agent.log');
    const hog = await startRemoteAgent(target, {
      cwd: t.slot.repoPath,
      logPath,
      statusPath,
      env: {},
      argv: ['python3', '-c', 'b = bytearray(512 << 20)\nprint("allocated")'],
      limits: { memoryBytes: 64 << 20, pids: 1000 },
    });
    expect(hog).not.toHaveProperty('notStartable');
    expect(await until(() => readRemoteExitStatus(target, statusPath))).toMatchObject({ exitCode: 1 });
    const log = (await readRemoteLog(target, { logPath, offset: 0, maxBytes: 10_000 })).toString();
    expect(log).toContain(
      'task-workspaces: limits on this target (ulimit): memory (data and anonymous mappings) 65536 KiB, processes of its user 1000; no CPU limit',
    );
    expect(log).toContain('MemoryError');
    expect(log).not.toContain('allocated');
  });

  it('records an exit code, and a signal for an agent that was stopped, with its child stopped too', async () => {
    const t = await launched('a2');
    const statusPath = path.join(root, 'logs/a2/exit3.exit');
    const exited = await startRemoteAgent(target, {
      cwd: t.slot.repoPath,
      logPath: path.join(root, 'logs/a2/exit3.log'),
      statusPath,
      env: {},
      argv: ['sh', '-c', 'exit 3'],
    });
    expect(exited).not.toHaveProperty('notStartable');
    const status = await until(() => readRemoteExitStatus(target, statusPath));
    expect(status).toMatchObject({ exitCode: 3, signal: null });
    expect(new Date(status.endedAt).toISOString()).toBe(status.endedAt);

    const logPath = path.join(root, 'logs/a2/stopped.log');
    const killedStatus = path.join(root, 'logs/a2/stopped.exit');
    const running = await startRemoteAgent(target, {
      cwd: t.slot.repoPath,
      logPath,
      statusPath: killedStatus,
      env: {},
      argv: ['bash', '-c', 'sleep 300 & echo "child=$!"; wait'],
    });
    if ('notStartable' in running) throw new Error('not startable');
    const childLine = await until(async () =>
      /child=(\d+)/.exec((await readRemoteLog(target, { logPath, offset: 0, maxBytes: 100 })).toString()),
    );
    const child = Number(childLine[1]);
    expect(processAlive(child)).toBe(true);
    expect(procStat(child).pgrp).toBe(running.pid);

    expect(await stopRemoteAgent(target, { ...running, graceMs: 3000 })).toBe('stopped');
    expect(processAlive(running.pid)).toBe(false);
    expect(processAlive(child)).toBe(false);
    expect(await readRemoteExitStatus(target, killedStatus)).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
    expect(await remoteProcesses(target, [running])).toEqual([{ alive: false, cwd: null }]);
    expect(await stopRemoteAgent(target, { ...running, graceMs: 100 })).toBe('gone');
  });

  it('kills a group that ignores SIGTERM once the grace has passed', async () => {
    const t = await launched('a5');
    const statusPath = path.join(root, 'logs/a5/agent.exit');
    const started = await startRemoteAgent(target, {
      cwd: t.slot.repoPath,
      logPath: path.join(root, 'logs/a5/agent.log'),
      statusPath,
      env: {},
      argv: ['bash', '-c', 'trap "" TERM; sleep 300'],
    });
    if ('notStartable' in started) throw new Error('not startable');
    const begun = Date.now();
    expect(await stopRemoteAgent(target, { ...started, graceMs: 700 })).toBe('stopped');
    expect(Date.now() - begun).toBeGreaterThanOrEqual(700);
    expect(processAlive(started.pid)).toBe(false);
    expect(await readRemoteExitStatus(target, statusPath)).toBeNull(); // the runner was killed with its group
  });

  it('refuses a command that cannot start, and starts nothing', async () => {
    const t = await launched('a3');
    const logPath = path.join(root, 'logs/a3/agent.log');
    for (const command of ['no-such-agent-command', './not-here', './README.md']) {
      const answer = await startRemoteAgent(target, {
        cwd: t.slot.repoPath,
        logPath,
        statusPath: path.join(root, 'logs/a3/agent.exit'),
        env: {},
        argv: [command],
      });
      expect(answer).toEqual({ notStartable: true });
    }
    expect(existsSync(path.join(root, 'logs/a3'))).toBe(false);
    expect(
      await reasonOf(
        startRemoteAgent(target, {
          cwd: path.join(root, 'nowhere'),
          logPath,
          statusPath: logPath + '.exit',
          env: {},
          argv: ['true'],
        }),
      ),
    ).toBe('cwd_missing');
  });

  it('passes arguments, environment and prompt through intact, with no signal ignored', async () => {
    const t = await launched('a4');
    const odd = [
      'a b',
      "it's",
      '"double"',
      '$(touch pwned)',
      '`touch pwned2`',
      'line1\nline2',
      '-n',
      '*',
      '\\',
      ' ',
      '',
    ];
    const statusPath = path.join(root, 'logs/a4/agent.exit');
    const promptPath = path.join(root, 'logs/a4/prompt.txt');
    const prompt = "Fix the bug; don't `rm -rf` $HOME\nsecond line\n";
    const started = await startRemoteAgent(target, {
      cwd: t.slot.repoPath,
      logPath: path.join(root, 'logs/a4/agent.log'),
      statusPath,
      promptPath,
      prompt,
      env: { TWS_ODD: "x'y $(id) `id`\nz" },
      argv: [
        'bash',
        '-c',
        'printf "%s\\0" "$@" > ../args.out; printf "%s" "$TWS_ODD" > ../env.out; cat "$TWS_PROMPT_FILE" > ../prompt.out; grep SigIgn /proc/self/status > ../sigign.out',
        'agent',
        ...odd,
      ],
    });
    expect(started).not.toHaveProperty('notStartable');
    expect(await until(() => readRemoteExitStatus(target, statusPath))).toMatchObject({ exitCode: 0 });
    expect(readFileSync(path.join(t.folder, 'args.out'), 'utf8').split('\0').slice(0, -1)).toEqual(odd);
    expect(readFileSync(path.join(t.folder, 'env.out'), 'utf8')).toBe("x'y $(id) `id`\nz");
    expect(readFileSync(path.join(t.folder, 'prompt.out'), 'utf8')).toBe(prompt);
    expect(statSync(promptPath).mode & 0o777).toBe(0o600);
    // The agent can be interrupted: HUP, INT, QUIT and TERM are not ignored (a runtime's own
    // real-time signals, inherited from whatever started sshd, are not the runner's to judge).
    const ignored = BigInt(
      `0x${readFileSync(path.join(t.folder, 'sigign.out'), 'utf8')
        .replace(/^SigIgn:\s+/, '')
        .trim()}`,
    );
    for (const signal of [1, 2, 3, 15]) expect((ignored >> BigInt(signal - 1)) & 1n, `signal ${signal}`).toBe(0n);
    expect(existsSync(path.join(t.slot.repoPath, 'pwned'))).toBe(false);
    expect(existsSync(path.join(t.slot.repoPath, 'pwned2'))).toBe(false);
  });
});

describe('bringing work back', () => {
  it('saves uncommitted work, untracked files included, as a commit on a host ref', async () => {
    const t = await launched('s1');
    expect(
      await saveRemoteWork(target, {
        repoPath: t.slot.repoPath,
        hostRepository: host,
        refFor: () => 'refs/tws/saved/s1',
        message: 'saved by test',
      }),
    ).toBeNull();
    writeFileSync(path.join(t.slot.repoPath, 'README.md'), 'edited\n');
    writeFileSync(path.join(t.slot.repoPath, 'untracked.txt'), 'new work\n');
    const commit = (
      await saveRemoteWork(target, {
        repoPath: t.slot.repoPath,
        hostRepository: host,
        refFor: () => 'refs/tws/saved/s1',
        message: 'saved by test',
      })
    )?.commit;
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    expect(git(host, 'rev-parse', 'refs/tws/saved/s1')).toBe(commit);
    expect(git(host, 'show', 'refs/tws/saved/s1:untracked.txt')).toBe('new work');
    expect(git(host, 'show', 'refs/tws/saved/s1:README.md')).toBe('edited');
    expect(git(t.slot.repoPath, 'for-each-ref', 'refs/tws-remote-save/')).toBe(''); // the temporary remote ref is gone
  });

  it('restores saved work with its index as it was; in place already or half in place, it is applied; a conflict changes nothing', async () => {
    const from = (await launched('rs1')).slot.repoPath;
    writeFileSync(path.join(from, 'README.md'), '# app\nstaged\n');
    git(from, 'add', 'README.md');
    writeFileSync(path.join(from, 'README.md'), '# app\nstaged\nthen changed beside the index\n');
    writeFileSync(path.join(from, 'added.txt'), 'added\n');
    git(from, 'add', 'added.txt');
    writeFileSync(path.join(from, 'loose.txt'), 'untracked\n');
    const status = statusOf(from);
    const files = fingerprint(from, ['.git']);
    const saved = await saveRemoteWork(target, {
      repoPath: from,
      hostRepository: host,
      refFor: () => 'refs/tws/saved/rs1',
      message: 'saved',
    });
    const patches = await savedWorkPatches(host, saved!.commit, { binary: 'git' });
    const restoredInto = async (taskId: string, before?: (clone: string) => void) => {
      const clone = (await launched(taskId)).slot.repoPath;
      before?.(clone);
      return { clone, outcome: await restoreRemoteWork(target, clone, patches) };
    };

    const fresh = await restoredInto('rs2');
    expect(fresh.outcome).toBe('applied');
    expect(statusOf(fresh.clone)).toEqual(status);
    expect(fingerprint(fresh.clone, ['.git'])).toBe(files);
    // A retried restore finds its work in place.
    expect(await restoreRemoteWork(target, fresh.clone, patches)).toBe('applied');
    expect(statusOf(fresh.clone)).toEqual(status);
    // One that stopped between its parts (the staged part in): the rest follows.
    const half = await restoredInto('rs3', (clone) => {
      writeFileSync(path.join(clone, '.git-staged.patch'), patches.staged);
      git(clone, 'apply', '--index', '.git-staged.patch');
      rmSync(path.join(clone, '.git-staged.patch'));
    });
    expect(half.outcome).toBe('applied');
    expect(statusOf(half.clone)).toEqual(status);
    // A clone where it does not fit is left as it was.
    let was = '';
    const other = await restoredInto('rs4', (clone) => {
      writeFileSync(path.join(clone, 'README.md'), 'something else\n');
      was = fingerprint(clone, ['.git']) + JSON.stringify(statusOf(clone));
    });
    expect(other.outcome).toBe('conflict');
    expect(fingerprint(other.clone, ['.git']) + JSON.stringify(statusOf(other.clone))).toBe(was);
  });

  it('brings the task branch back: present, fetched, fast-forwarded, refused when diverged', async () => {
    const t = await launched('b1');
    const a = { repoPath: t.slot.repoPath, branch: 'tws/b1', hostRepository: host };
    // The host has the commit (the base) but not the branch: the branch is made there, at it.
    expect(await bringBranchBack(target, a)).toBe('fetched');
    expect(git(host, 'rev-parse', 'tws/b1')).toBe(git(host, 'rev-parse', 'main'));
    expect(await bringBranchBack(target, a)).toBe('present');

    writeFileSync(path.join(t.slot.repoPath, 'work.txt'), 'one\n');
    git(t.slot.repoPath, 'add', 'work.txt');
    git(t.slot.repoPath, 'commit', '-q', '-m', 'remote work');
    expect(await bringBranchBack(target, a)).toBe('fetched');
    expect(git(host, 'rev-parse', 'tws/b1')).toBe(git(t.slot.repoPath, 'rev-parse', 'HEAD'));
    expect(await bringBranchBack(target, a)).toBe('present');

    writeFileSync(path.join(t.slot.repoPath, 'work.txt'), 'two\n');
    git(t.slot.repoPath, 'commit', '-q', '-am', 'more remote work');
    expect(await bringBranchBack(target, a)).toBe('fetched');
    expect(git(host, 'rev-parse', 'tws/b1')).toBe(git(t.slot.repoPath, 'rev-parse', 'HEAD'));

    // The host branch moves on its own while the remote does too: git refuses, the host keeps its branch.
    const hostSide = mkdtempSync(path.join(hostDir, 'wt-'));
    rmSync(hostSide, { recursive: true });
    git(host, 'worktree', 'add', '-q', hostSide, 'tws/b1');
    writeFileSync(path.join(hostSide, 'host.txt'), 'host\n');
    git(hostSide, 'add', 'host.txt');
    git(hostSide, 'commit', '-q', '-m', 'host work');
    git(host, 'worktree', 'remove', hostSide);
    const hostHead = git(host, 'rev-parse', 'tws/b1');
    writeFileSync(path.join(t.slot.repoPath, 'work.txt'), 'three\n');
    git(t.slot.repoPath, 'commit', '-q', '-am', 'diverging remote work');
    expect(await bringBranchBack(target, a)).toBe('refused');
    expect(git(host, 'rev-parse', 'tws/b1')).toBe(hostHead);
  });
  it('sends back only what the host lacks, so a history past the transport reply cap still comes back', async () => {
    const big = makeRepo(hostDir, 'big', { files: { 'blob.bin': randomBytes(17 * 1024 * 1024).toString('base64') } }); // incompressible, past 16 MB
    const t = await launched('b2', { sourcePath: big });
    writeFileSync(path.join(t.slot.repoPath, 'small.txt'), 'small\n');
    git(t.slot.repoPath, 'add', 'small.txt');
    git(t.slot.repoPath, 'commit', '-q', '-m', 'small remote work');
    expect(await bringBranchBack(target, { repoPath: t.slot.repoPath, branch: 'tws/b2', hostRepository: big })).toBe(
      'fetched',
    );
    expect(git(big, 'show', 'tws/b2:small.txt')).toBe('small');
    writeFileSync(path.join(t.slot.repoPath, 'unsaved.txt'), 'unsaved\n');
    const saved = await saveRemoteWork(target, {
      repoPath: t.slot.repoPath,
      hostRepository: big,
      refFor: () => 'refs/tws/saved/b2',
      message: 'saved',
    });
    expect(git(big, 'show', `${saved?.commit}:unsaved.txt`)).toBe('unsaved');
  });
});

describe('audited removal', () => {
  it('refuses a dirty clone, another branch, a moved head, a marker mismatch and a symlink; removes a clean clone, then the folder', async () => {
    const t = await launched('d1');
    const repo = t.slot.repoPath;
    const ask = (
      over: Partial<{ markerText: string; repoPath: string; expectedBranch: string; expectedHead: string }> = {},
    ) =>
      removeRemoteClone(target, {
        taskFolder: t.folder,
        markerText: t.marker,
        repoPath: repo,
        expectedBranch: 'tws/d1',
        expectedHead: t.headCommit,
        ...over,
      });

    writeFileSync(path.join(repo, 'scratch.txt'), 'unsaved\n');
    expect(await ask()).toBe('dirty');
    expect(readFileSync(path.join(repo, 'scratch.txt'), 'utf8')).toBe('unsaved\n');
    rmSync(path.join(repo, 'scratch.txt'));

    expect(await ask({ expectedBranch: 'main' })).toBe('other_branch');
    expect(await ask({ expectedHead: git(host, 'rev-parse', 'main~1') })).toBe('moved');
    expect(await ask({ markerText: markerOf('someone-else') })).toBe('marker_mismatch');

    writeFileSync(path.join(repo, 'README.md'), 'stashed\n');
    git(repo, 'stash', '-q');
    expect(await ask()).toBe('dirty'); // a stash lives only in the clone
    git(repo, 'stash', 'drop', '-q');

    const link = path.join(t.folder, 'link');
    symlinkSync(repo, link);
    expect(await ask({ repoPath: link })).toBe('not_a_directory');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(path.join(repo, 'README.md'), 'utf8')).toBe('# app\n');
    rmSync(link);

    const plain = path.join(t.folder, 'plain');
    mkdirSync(plain);
    writeFileSync(path.join(plain, 'notes.txt'), 'mine\n');
    expect(await ask({ repoPath: plain })).toBe('not_a_checkout');
    expect(await removeRemoteTaskFolderIfEmpty(target, { taskFolder: t.folder, markerText: t.marker })).toBe('kept');
    rmSync(plain, { recursive: true });

    expect(await ask()).toBe('removed');
    expect(existsSync(repo)).toBe(false);
    expect(await ask()).toBe('already_gone');
    expect(
      await removeRemoteTaskFolderIfEmpty(target, { taskFolder: t.folder, markerText: markerOf('someone-else') }),
    ).toBe('kept');
    expect(await removeRemoteTaskFolderIfEmpty(target, { taskFolder: t.folder, markerText: t.marker })).toBe('removed');
    expect(existsSync(t.folder)).toBe(false);
    expect(await removeRemoteTaskFolderIfEmpty(target, { taskFolder: t.folder, markerText: t.marker })).toBe(
      'already_gone',
    );
  });

  it('undoes a launch exactly: removes the clean clone, keeps a changed one with its marker', async () => {
    const one = await launched('u1');
    const two = await launched('u1', { repoPath: path.join(folderOf('u1'), 'lib') });
    writeFileSync(path.join(two.slot.repoPath, 'edit.txt'), 'keep me\n');
    const slots = [one, two].map((t) => ({ repoPath: t.slot.repoPath, branch: 'tws/u1', headCommit: t.headCommit }));
    expect(await discardRemoteSlots(target, { taskFolder: one.folder, markerText: one.marker, slots })).toEqual({
      removed: 1,
      kept: 1,
    });
    expect(listDir(one.folder)).toEqual(['.task-workspace.json', 'lib']);
    rmSync(path.join(two.slot.repoPath, 'edit.txt'));
    const before = fingerprint(one.folder);
    expect(
      await discardRemoteSlots(target, { taskFolder: one.folder, markerText: markerOf('someone-else'), slots }),
    ).toEqual({ removed: 1, kept: 1 }); // the absent one counts as removed
    expect(fingerprint(one.folder)).toBe(before);
    expect(await discardRemoteSlots(target, { taskFolder: one.folder, markerText: one.marker, slots })).toEqual({
      removed: 2,
      kept: 0,
    });
    expect(existsSync(one.folder)).toBe(false);
  });
});

describe('refusals', () => {
  it('refuses a relative path or an option-like branch before anything runs remotely', async () => {
    expect(
      await reasonOf(
        readRemoteWorkspace(target, { taskFolder: 'task-x', workspacePath: '/x', repoPaths: [], withDirty: false }),
      ),
    ).toBe('invalid_path');
    expect(await reasonOf(launched('h1', { branch: '--upload-pack=touch /tmp/x' }))).toBe('invalid_branch');
    expect(existsSync(folderOf('h1'))).toBe(false);
  });

  it('lets the transport refusal of a target that is down through, typed', async () => {
    await server.stop();
    try {
      const err = await readRemoteLog(target, { logPath: path.join(root, 'any.log'), offset: 0, maxBytes: 10 }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SshRefusal);
      expect((err as SshRefusal).code).toBe('ssh_target_unavailable');
    } finally {
      await server.start();
    }
  });
});

describe('the target runs no program its clone names', () => {
  it('hooks, fsmonitor and a filter armed in a clone run in none of the remote operations', async () => {
    const t = await launched('h1');
    const marks = mkdtempSync(path.join(os.tmpdir(), 'tws-remote-marks-'));
    const script = (name: string, body = '') => {
      const file = path.join(marks, `${name}.sh`);
      writeFileSync(file, `#!/bin/sh\ntouch ${marks}/${name}.ran\n${body}`, { mode: 0o755 });
      return file;
    };
    const gitDir = path.join(t.slot.repoPath, '.git');
    mkdirSync(path.join(gitDir, 'hooks'), { recursive: true });
    mkdirSync(path.join(gitDir, 'info'), { recursive: true });
    for (const hook of ['post-checkout', 'reference-transaction', 'post-index-change'])
      writeFileSync(path.join(gitDir, 'hooks', hook), `#!/bin/sh\n${script(hook)}\nexit 0\n`, { mode: 0o755 });
    git(t.slot.repoPath, 'config', 'core.fsmonitor', script('fsmonitor', 'exit 1\n'));
    git(t.slot.repoPath, 'config', 'filter.evil.clean', script('clean', 'cat\n'));
    writeFileSync(path.join(gitDir, 'info/attributes'), '* filter=evil\n');
    writeFileSync(path.join(t.slot.repoPath, 'README.md'), 'changed on the target\n');
    writeFileSync(path.join(t.slot.repoPath, 'new.txt'), 'new\n');

    expect(
      (await readRemoteGitStatus(target, { repoPath: t.slot.repoPath, baseBranch: 'main' }))?.files.length,
    ).toBeGreaterThan(0);
    expect(
      await saveRemoteWork(target, {
        repoPath: t.slot.repoPath,
        hostRepository: host,
        refFor: () => 'refs/tws/saved/h1',
        message: 'saved',
      }),
    ).toMatchObject({ ref: 'refs/tws/saved/h1', commit: expect.stringMatching(/^[0-9a-f]{40}$/) });
    // The saved work's bundle brought the branch's commit; the branch is moved to it on the host alone.
    expect(await bringBranchBack(target, { repoPath: t.slot.repoPath, branch: 'tws/h1', hostRepository: host })).toBe(
      'fetched',
    );
    expect(git(host, 'rev-parse', 'tws/h1')).toBe(git(t.slot.repoPath, 'rev-parse', 'HEAD'));
    expect(listDir(marks).filter((f) => f.endsWith('.ran'))).toEqual([]);
    // The control: the target user's plain git runs them.
    writeFileSync(path.join(t.slot.repoPath, 'README.md'), 'changed again\n');
    git(t.slot.repoPath, 'add', '--all');
    expect(
      listDir(marks)
        .filter((f) => f.endsWith('.ran'))
        .sort(),
    ).toEqual(expect.arrayContaining(['clean.ran', 'fsmonitor.ran']));
    rmSync(marks, { recursive: true, force: true });
  });
});

describe('copied files into a clone', () => {
  it('writes each file with its mode where nothing is, never through a link or over a file, and reads through what it skips', async () => {
    const { slot } = await launched('cp1');
    const clone = slot.repoPath;
    const outside = mkdtempSync(path.join(hostDir, 'outside-'));
    symlinkSync(outside, path.join(clone, 'linked'));
    writeFileSync(path.join(clone, 'there.txt'), 'was there\n');
    const file = (p: string, text: string, mode = 0o644) => ({ path: p, data: Buffer.from(text), mode });
    const answers = await copyIntoRemoteClone(target, clone, [
      file('linked/inside.txt', 'through the link\n'),
      file('there.txt', 'over it\n'),
      file('../escape.txt', 'climbs out\n'),
      file('a folder/with space\nand line.txt', 'spaced\n', 0o600),
      file('linked', 'over the link\n'),
      file('last.bin', '\0binary\0\n', 0o755),
    ]);
    expect(answers).toEqual(['symlink', 'exists', 'not_a_file', null, 'symlink', null]);
    expect(readdirSync(outside)).toEqual([]);
    expect(readFileSync(path.join(clone, 'there.txt'), 'utf8')).toBe('was there\n');
    expect(existsSync(path.join(path.dirname(clone), 'escape.txt'))).toBe(false);
    const spaced = path.join(clone, 'a folder/with space\nand line.txt');
    expect(readFileSync(spaced, 'utf8')).toBe('spaced\n');
    expect(statSync(spaced).mode & 0o777).toBe(0o600);
    // The bytes of what was skipped were read through: the last file is whole.
    expect(readFileSync(path.join(clone, 'last.bin'), 'utf8')).toBe('\0binary\0\n');
    expect(statSync(path.join(clone, 'last.bin')).mode & 0o777).toBe(0o755);
    // A clone that is not a folder: nothing written.
    expect(await reasonOf(copyIntoRemoteClone(target, path.join(clone, 'linked'), [file('x', 'x')]))).toBe(
      'copy_failed',
    );
    expect(readdirSync(outside)).toEqual([]);
  });
});
