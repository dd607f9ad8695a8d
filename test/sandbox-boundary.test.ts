/**
 * The sandbox is a boundary against an agent written to escape it. Each test is one
 * attack, tried by an agent launched with the user token, and then what the world looks like
 * after it: files, branches, modes, processes. The same attacks are tried again as the agent's uid
 * *outside* any sandbox (as an escape through a mistake in the mount table would be): file
 * permissions alone must hold them.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { taskFolder, worktreePath } from '../domain/task-layout';
import { objectStoreKeyDir, objectStoreOf } from '../git/agent-objects';
import { harnessesPerTest, OPERATOR_TOKEN } from './support/harness';
import { agentOutputUntil, createTask, launch, pidOf, registerRepo, waitUntil } from './support/scenario';
import { archive, releaseIdleTask, waitForJob } from './support/cleanup';
import { git, makeRepo } from './support/world';

const { harness } = harnessesPerTest();

type H = Awaited<ReturnType<typeof harness>>;

/** Runs `script` as the agent of a new task on a new repository; answers what it printed up to `done`. */
async function agentTries(h: H, name: string, script: string[], extra: Record<string, unknown> = {}) {
  const repo = makeRepo(h.scratch, name);
  const repositoryId = await registerRepo(h, repo, name);
  const taskId = await createTask(h, [repositoryId]);
  const res = await launch(h, taskId, {
    command: ['sh', '-c', [...script, 'echo tries-ended; sleep 600'].join('\n')],
    ...extra,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const out = await agentOutputUntil(h, res.body.executionId, TRIES_ENDED);
  return { repo, repositoryId, taskId, out, worktree: worktreePath(h.config.workspaceRoot, taskId, name) };
}

/** What the agent prints once every attempt is made (not `done`, which an attempt's own line holds). */
const TRIES_ENDED = 'tries-ended';

/** `what: done` or `what: refused`, as the agent sees its attempt end. */
const attempt = (what: string, cmd: string) =>
  `if (${cmd}) >/dev/null 2>&1; then echo "${what}: done"; else echo "${what}: refused"; fi`;

/** The uid a task's agents run as, from the service's records. */
async function uidOf(h: H, taskId: string): Promise<number> {
  const { rows } = await h.pool.query<{ uid: string }>('SELECT uid FROM agent_uids WHERE owner = $1', [
    `task:${taskId}`,
  ]);
  expect(rows).toHaveLength(1);
  return Number(rows[0]!.uid);
}

/** A folder anyone may write a mark in: a program that runs leaves one, whoever it runs as. */
function marksFolder(h: H): string {
  const marks = path.join(h.scratch, 'marks');
  mkdirSync(marks);
  execFileSync('chmod', ['0777', marks]);
  return marks;
}

/** What an escaped agent runs to point its worktree at a git dir of its own, armed with a filter and an fsmonitor. */
function forgeRegistration(worktree: string, marks: string): string {
  const evilDir = path.join(worktree, 'evil-git');
  return [
    `git init -q --bare '${evilDir}'`,
    `git --git-dir='${evilDir}' config filter.evil.clean 'id -u > ${marks}/filter-ran; cat'`,
    `git --git-dir='${evilDir}' config core.fsmonitor 'id -u > ${marks}/fsmonitor-ran; true'`,
    `echo '* filter=evil' > '${worktree}/.gitattributes'`,
    `rm -f '${worktree}/.git' && printf 'gitdir: ${evilDir}\\n' > '${worktree}/.git'`,
  ].join(' && ');
}

/** A command run as `uid` with no sandbox at all: what file permissions alone allow it. */
function asUid(uid: number, command: string): { ok: boolean; out: string } {
  const r = spawnSync('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'sh', '-c', command], {
    encoding: 'utf8',
    env: { PATH: '/usr/bin:/bin' },
  });
  return { ok: r.status === 0, out: `${r.stdout}${r.stderr}` };
}

describe('the sandbox holds against an agent that tries to leave it', () => {
  it('the agent is its workspace’s own unprivileged uid, with no capability: mount, umount /proc, a user namespace, chown and chmod all fail', async () => {
    const h = await harness();
    const { out, taskId, worktree, repo } = await agentTries(
      h,
      'caps',
      [
        'echo "uid: $(id -u)"',
        "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs):' /proc/self/status",
        'mkdir -p m',
        attempt('mount', 'mount --bind / m'),
        attempt('umount proc', 'umount /proc'),
        attempt('lazy umount proc', 'umount -l /proc'),
        attempt('user namespace', 'unshare -U -r true'),
        attempt('mount namespace', 'unshare -m true'),
        attempt('chmod config', `chmod 666 '${'REPO'}/.git/config'`),
        attempt('chown config', `chown $(id -u) '${'REPO'}/.git/config'`),
        attempt('chmod data', `chmod 777 '${'DATA'}'`),
        'echo "processes: $(ls /proc | grep -c "^[0-9]")"',
        'echo mine > mine.txt',
      ].map((line) => line.replace(/REPO/g, path.join(h.scratch, 'caps')).replace(/DATA/g, h.config.dataDir)),
    );
    const uid = await uidOf(h, taskId);
    expect(uid).toBeGreaterThanOrEqual(h.config.agentUids.first);
    expect(out).toContain(`uid: ${uid}`);
    expect(out).toMatch(/CapEff:\s+0000000000000000/);
    expect(out).toMatch(/CapPrm:\s+0000000000000000/);
    expect(out).toMatch(/CapBnd:\s+0000000000000000/);
    expect(out).toMatch(/NoNewPrivs:\s+1/);
    for (const what of [
      'mount',
      'umount proc',
      'lazy umount proc',
      'user namespace',
      'mount namespace',
      'chmod config',
      'chown config',
    ])
      expect(out).toContain(`${what}: refused`);
    expect(Number(/processes: (\d+)/.exec(out)![1])).toBeLessThan(10);
    // The world as it was: the repository's config and the data folder keep their owner and mode.
    const config = statSync(path.join(repo, '.git/config'));
    expect([config.uid, config.mode & 0o777]).toEqual([1000, 0o644]);
    expect(statSync(h.config.dataDir).mode & 0o777).toBe(0o711);
    // Its own work is its uid's.
    expect(statSync(path.join(worktree, 'mine.txt')).uid).toBe(uid);
    expect(statSync(worktree).uid).toBe(uid);
  });

  it('a new worktree is handed over whole, its index refreshed once by the agent’s uid: the service’s git reads it right and never writes it; the agent’s own git keeps it', async () => {
    const h = await harness();
    const repo = makeRepo(h.scratch, 'handover');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'handover')]);
    // The agent looks at its repository only when told to (a file in its workspace).
    const res = await launch(h, taskId, {
      command: [
        'sh',
        '-c',
        'while [ ! -e .go ]; do sleep 0.05; done; git status --porcelain >/dev/null; echo looked; sleep 600',
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    await pidOf(h, res.body.sessionId);
    const uid = await uidOf(h, taskId);
    const worktree = worktreePath(h.config.workspaceRoot, taskId, 'handover');
    const indexFile = path.join(git(worktree, 'rev-parse', '--absolute-git-dir'), 'index');
    const owners = () =>
      new Set([...git(worktree, 'ls-files', '--debug').matchAll(/uid: (\d+)/g)].map((m) => Number(m[1])));
    // Handed over: every file is the agent's uid's, and the index, refreshed once then as that uid
    // (so no later status reads every file again), records them so and is that uid's.
    const tracked = git(worktree, 'ls-files').split('\n')[0]!;
    expect(statSync(path.join(worktree, tracked)).uid).toBe(uid);
    expect(owners()).toEqual(new Set([uid]));
    expect(statSync(indexFile).uid).toBe(uid);
    // A file's times change, its content not: the service's status reads it as clean and leaves the index as it is.
    const before = statSync(indexFile);
    execFileSync('touch', ['-d', '2001-01-01', path.join(worktree, tracked)]);
    const status = await h.api('GET', `/v1/tasks/${taskId}/git-status`);
    expect(status.status, JSON.stringify(status.body)).toBe(200);
    expect(JSON.stringify(status.body)).not.toContain(tracked);
    const after = statSync(indexFile);
    expect([after.ino, after.mtimeMs, after.uid]).toEqual([before.ino, before.mtimeMs, before.uid]);
    // The agent's own git looks: the index stays its uid's, every file recorded as its uid's.
    writeFileSync(path.join(worktree, '.go'), '');
    await agentOutputUntil(h, res.body.executionId, 'looked');
    expect(owners()).toEqual(new Set([uid]));
    expect(statSync(indexFile).uid).toBe(uid);
  });

  it('nothing of the service can be read, in the sandbox or by the agent’s uid outside it: secrets, TLS keys, the test process, another task’s worktree and log', async () => {
    const h = await harness();
    const secrets = path.join(h.config.dataDir, 'secrets.json');
    writeFileSync(secrets, JSON.stringify({ operatorToken: OPERATOR_TOKEN }), { mode: 0o644 });
    const tls = path.join(h.config.dataDir, 'engine-tls');
    mkdirSync(tls, { recursive: true, mode: 0o755 });
    writeFileSync(path.join(tls, 'client.key'), 'PRIVATE KEY', { mode: 0o644 });
    const other = await agentTries(h, 'other', ['echo other-secret > other.txt']);
    const otherLog = (
      await h.pool.query<{ log_path: string }>(
        'SELECT e.log_path FROM executions e JOIN sessions s ON s.id = e.session_id WHERE s.task_id = $1',
        [other.taskId],
      )
    ).rows[0]!.log_path;
    const { out, taskId } = await agentTries(h, 'reader', [
      attempt('secrets', `cat '${secrets}'`),
      attempt('tls key', `cat '${tls}/client.key'`),
      attempt('service environ', `cat /proc/${process.pid}/environ`),
      attempt('other worktree', `cat '${other.worktree}/other.txt'`),
      attempt('other log', `cat '${otherLog}'`),
      attempt('workspace root', `ls '${h.config.workspaceRoot}' | grep -q 'task-${other.taskId}'`),
    ]);
    for (const what of ['secrets', 'tls key', 'service environ', 'other worktree', 'other log', 'workspace root'])
      expect(out).toContain(`${what}: refused`);
    expect(out).not.toContain(OPERATOR_TOKEN);
    expect(out).not.toContain('other-secret');
    // By permission too: the agent's uid, with no sandbox at all, reads none of them.
    const uid = await uidOf(h, taskId);
    for (const file of [secrets, path.join(tls, 'client.key'), path.join(other.worktree, 'other.txt'), otherLog]) {
      const r = asUid(uid, `cat '${file}'`);
      expect(r.ok, `${file}: ${r.out}`).toBe(false);
    }
    // Nor the other task's object store (its commits not yet home), whose path it could work out.
    const otherStore = objectStoreOf(objectStoreKeyDir(h.config.dataDir, other.worktree));
    expect(existsSync(otherStore)).toBe(true);
    expect(asUid(uid, `ls '${otherStore}'`).ok).toBe(false);
    expect(asUid(uid, `ls '${h.config.dataDir}'`).ok).toBe(false);
    expect(asUid(uid, `ls '${h.config.workspaceRoot}'`).ok).toBe(false);
  });

  it('no write lands outside its workspace: the source checkout, the base branch, another task’s files', async () => {
    const h = await harness();
    const other = await agentTries(h, 'victim', ['echo keep > keep.txt']);
    const name = 'writer';
    const repo = path.join(h.scratch, name);
    const { out, taskId, worktree } = await agentTries(h, name, [
      'echo mine > mine.txt && git add mine.txt && git -c user.name=a -c user.email=a@example.com commit -q -m mine && echo committed',
      attempt('source file', `echo evil > '${repo}/README.md'`),
      attempt('base branch moved', 'git update-ref refs/heads/main HEAD'),
      attempt('base branch deleted', 'git update-ref -d refs/heads/main'),
      attempt('other file', `test -e '${other.worktree}/keep.txt' && rm '${other.worktree}/keep.txt'`),
    ]);
    // (The source checkout's work tree is not in the sandbox at all: what the agent wrote at its path
    // landed in the sandbox's own /tmp here, and is gone with it; the checkout is checked below.)
    for (const what of ['base branch moved', 'base branch deleted', 'other file'])
      expect(out).toContain(`${what}: refused`);
    expect(out).toContain('other file: refused');
    expect(out).toContain('committed');
    // The world: the checkout and its base branch as they were, the other task's file there, no host file.
    expect(readFileSync(path.join(repo, 'README.md'), 'utf8')).toBe(`# ${name}\n`);
    expect(git(repo, 'log', '-1', '--format=%s', 'main')).toBe('initial');
    expect(readFileSync(path.join(other.worktree, 'keep.txt'), 'utf8')).toBe('keep\n');
    // By permission too: outside any sandbox, the agent's uid cannot touch the other task's files.
    const uid = await uidOf(h, taskId);
    expect(asUid(uid, `rm -f '${other.worktree}/keep.txt'`).ok).toBe(false);
    expect(asUid(uid, `touch '${other.worktree}/planted'`).ok).toBe(false);
    expect(existsSync(path.join(other.worktree, 'keep.txt'))).toBe(true);
    expect(existsSync(path.join(other.worktree, 'planted'))).toBe(false);
    expect(statSync(worktree).uid).toBe(uid);
  });

  it('a launch’s env.PATH and env.LD_PRELOAD, naming programs the agent wrote, run nothing outside the sandbox', async () => {
    const h = await harness();
    const marks = path.join(h.scratch, 'marks');
    mkdirSync(marks, { mode: 0o777 });
    execFileSync('chmod', ['0777', marks]);
    // The first session plants the programs in its worktree.
    const planted = await agentTries(h, 'planted', ['echo planted']);
    const evil = path.join(planted.worktree, 'evil');
    mkdirSync(evil);
    for (const name of ['bwrap', 'setpriv', 'slirp4netns', 'env', 'sh']) {
      writeFileSync(path.join(evil, name), `#!/bin/sh\nid -u > '${marks}/${name}'\nexec /usr/bin/${name} "$@"\n`, {
        mode: 0o755,
      });
    }
    const source = path.join(planted.worktree, 'preload.c');
    writeFileSync(
      source,
      `#include <stdio.h>\n#include <unistd.h>\n__attribute__((constructor)) static void pwn(void) {\n  char p[512]; snprintf(p, sizeof p, "${marks}/preload-%d-%d", (int)getuid(), (int)getpid());\n  FILE *f = fopen(p, "w"); if (f) fclose(f);\n}\n`,
    );
    execFileSync('gcc', ['-shared', '-fPIC', '-o', path.join(planted.worktree, 'preload.so'), source]);
    const res = await launch(h, planted.taskId, {
      command: ['sh', '-c', 'echo "inside: $LD_PRELOAD"; echo tries-ended; sleep 600'],
      env: { PATH: `${evil}:/usr/bin:/bin`, LD_PRELOAD: path.join(planted.worktree, 'preload.so') },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const out = await agentOutputUntil(h, res.body.executionId, TRIES_ENDED);
    // The agent has its variables...
    expect(out).toContain(`inside: ${path.join(planted.worktree, 'preload.so')}`);
    // ...and no program outside the sandbox ran the agent's code: none of the stand-ins ran, and
    // the library was loaded only by processes of the agent's uid (in the sandbox, whose /tmp and
    // view are its own), never by one of the service's (uid 0).
    const uid = await uidOf(h, planted.taskId);
    const seen = readdirSync(marks);
    expect(seen.filter((f) => !f.startsWith('preload-'))).toEqual([]);
    expect(seen.filter((f) => f.startsWith('preload-') && !f.startsWith(`preload-${uid}-`))).toEqual([]);
  });

  it('its worktree’s .git file, commondir and gitdir cannot be rewritten in the sandbox; rewritten by its uid outside it, the service’s git follows none of them and no other task is harmed', async () => {
    const h = await harness();
    const marks = marksFolder(h);
    const repo = makeRepo(h.scratch, 'shared');
    const repositoryId = await registerRepo(h, repo, 'shared');
    const victimTask = await createTask(h, [repositoryId]);
    const victim = await launch(h, victimTask, { command: ['sleep', '600'] });
    expect(victim.status).toBe(201);
    const victimWorktree = worktreePath(h.config.workspaceRoot, victimTask, 'shared');
    const taskId = await createTask(h, [repositoryId]);
    const res = await launch(h, taskId, {
      command: [
        'sh',
        '-c',
        [
          'admin=$(git rev-parse --absolute-git-dir)',
          attempt('.git file', 'echo "gitdir: /tmp/evil" > .git'),
          attempt('.git removed', 'rm -f .git && test ! -e .git'),
          attempt('commondir', 'echo /tmp/evil > "$admin/commondir"'),
          attempt('gitdir', `echo '${victimWorktree}/.git' > "$admin/gitdir"`),
          attempt('config.worktree', 'echo "[filter \\"x\\"]" >> "$admin/config.worktree"'),
          attempt('worktree renamed', `mv "$(pwd)" "$(pwd)-moved"`),
          'echo work > work.txt && git add work.txt && git -c user.name=a -c user.email=a@example.com commit -q -m work && echo committed',
          'echo tries-ended; sleep 600',
        ].join('\n'),
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const out = await agentOutputUntil(h, res.body.executionId, TRIES_ENDED);
    for (const what of ['.git file', '.git removed', 'commondir', 'gitdir', 'config.worktree', 'worktree renamed'])
      expect(out).toContain(`${what}: refused`);
    expect(out).toContain('committed');

    // Now as an escaped agent would: its uid, outside any sandbox, points its worktree at a git dir
    // it made (a filter in its config, attributes that select it) and its registration at the victim.
    const uid = await uidOf(h, taskId);
    const worktree = worktreePath(h.config.workspaceRoot, taskId, 'shared');
    const admin = git(worktree, 'rev-parse', '--absolute-git-dir');
    const forge = forgeRegistration(worktree, marks);
    const forged = asUid(uid, forge);
    expect(forged.ok, forged.out).toBe(true);
    // Its registration files are the service's: even its own uid cannot rewrite them in place.
    expect(asUid(uid, `echo '${victimWorktree}/.git' > '${admin}/gitdir'`).ok).toBe(false);

    // The service's git on the forged worktree: the status observation runs nothing the agent named.
    const status = await h.api('GET', `/v1/tasks/${taskId}/git-status`);
    expect(status.status, JSON.stringify(status.body)).toBe(409);
    expect(status.body.error).toMatchObject({ code: 'workspace_reuse_unsafe' });
    expect(JSON.stringify(status.body)).not.toContain(h.scratch);
    expect(readdirSync(marks)).toEqual([]);
    // The victim is judged by its own records: it attaches, reads and archives as before.
    const attach = await launch(h, victimTask, { command: ['sleep', '600'] });
    expect(attach.status, JSON.stringify(attach.body)).toBe(201);
    expect((await h.api('GET', `/v1/tasks/${victimTask}/git-status`)).status).toBe(200);
    const stopAll = async (task: string) => {
      const sessions = (await h.pool.query('SELECT id FROM sessions WHERE task_id = $1', [task])).rows;
      for (const s of sessions) await h.api('POST', `/v1/sessions/${s.id}/stop`);
    };
    await stopAll(victimTask);
    const archived = await archive(h, victimTask);
    const job = await waitForJob(h, archived.operationId);
    expect(job.state, JSON.stringify(job)).toBe('succeeded');
    await waitUntil(async () => !existsSync(victimWorktree), 'the victim worktree to be removed');
    // The archive of the forged task itself runs nothing of the agent's either.
    await stopAll(taskId);
    const own = await archive(h, taskId);
    await waitForJob(h, own.operationId, ['succeeded', 'needs_operator', 'failed', 'retry_wait']);
    expect(readdirSync(marks)).toEqual([]);
  });

  it('a forged registration through an idle release and a consented delete: nothing of the agent’s runs, and another task is released and restored as before', async () => {
    const h = await harness();
    const marks = marksFolder(h);
    const repo = makeRepo(h.scratch, 'idle');
    const repositoryId = await registerRepo(h, repo, 'idle');
    const stopped = async (command: string) => {
      const taskId = await createTask(h, [repositoryId]);
      const res = await launch(h, taskId, { command: ['sh', '-c', `${command}; echo tries-ended; sleep 600`] });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      await agentOutputUntil(h, res.body.executionId, TRIES_ENDED);
      expect((await h.api('POST', `/v1/sessions/${res.body.sessionId}/stop`)).status).toBe(200);
      return taskId;
    };
    const forgedTask = await stopped('echo mine > mine.txt');
    const otherTask = await stopped('echo theirs > theirs.txt');
    const worktree = worktreePath(h.config.workspaceRoot, forgedTask, 'idle');
    const other = worktreePath(h.config.workspaceRoot, otherTask, 'idle');
    // As an escaped agent: its own git dir with a filter and fsmonitor, its .git file pointed there.
    const forged = asUid(await uidOf(h, forgedTask), forgeRegistration(worktree, marks));
    expect(forged.ok, forged.out).toBe(true);

    // An idle release of both: the other task's work is saved and its worktree released; the forged
    // one is not read, and nothing of it ran.
    const released = await h.api('POST', '/v1/idle-release', { hostId: h.config.hostId, idleForMs: 1 }, OPERATOR_TOKEN);
    expect(released.status, JSON.stringify(released.body)).toBe(200);
    const jobOf = (taskId: string) =>
      released.body.released.find((x: { taskId: string }) => x.taskId === taskId)?.operationId as string;
    expect((await waitForJob(h, jobOf(otherTask))).state).toBe('succeeded');
    const forgedJob = await waitForJob(h, jobOf(forgedTask), ['succeeded', 'needs_operator', 'failed', 'retry_wait']);
    expect(readdirSync(marks)).toEqual([]);
    expect(existsSync(other)).toBe(false);
    // Its next launch restores its work, as before.
    const again = await launch(h, otherTask, { command: ['sleep', '600'] });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(readFileSync(path.join(other, 'theirs.txt'), 'utf8')).toBe('theirs\n');

    // A consented delete of the forged task runs nothing of the agent's either (its release, which
    // could not read the worktree, is ended by the operator first).
    if (forgedJob.state !== 'succeeded')
      expect(
        (await h.api('POST', `/v1/cleanup-jobs/${jobOf(forgedTask)}/cancel`, {}, OPERATOR_TOKEN)).status,
      ).toBeLessThan(300);
    const del = await h.api('DELETE', `/v1/tasks/${forgedTask}?discardChanges=true`, undefined, OPERATOR_TOKEN);
    expect(del.status, JSON.stringify(del.body)).toBeLessThan(300);
    if (del.body.operationId)
      await waitForJob(h, del.body.operationId, ['succeeded', 'needs_operator', 'failed', 'retry_wait']);
    expect(readdirSync(marks)).toEqual([]);
  });

  it('a workspace of two repositories made again after an idle release, in a task folder that stayed, is its agent’s: it writes and commits in both', async () => {
    const h = await harness();
    const names = ['first', 'second'];
    const ids = [];
    for (const name of names) ids.push(await registerRepo(h, makeRepo(h.scratch, name), name));
    const taskId = await createTask(h, ids);
    const launched = await launch(h, taskId, { command: ['sleep', '600'] });
    expect(launched.status, JSON.stringify(launched.body)).toBe(201);
    expect((await h.api('POST', `/v1/sessions/${launched.body.sessionId}/stop`)).status).toBe(200);
    expect((await releaseIdleTask(h, taskId)).state).toBe('succeeded');
    // The task folder stayed, its agent's (a file the agent left beside its worktrees): the new
    // worktrees are made in it by the service, and must be given to the agent all the same.
    const folder = taskFolder(h.config.workspaceRoot, taskId);
    const uid = await uidOf(h, taskId);
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, 'left-behind.txt'), 'mine\n');
    execFileSync('chown', ['-R', `${uid}:${uid}`, folder]);
    const commit = (name: string) =>
      `(cd ${name} && echo again > again.txt && git add again.txt && git -c user.name=a -c user.email=a@example.com commit -q -m again && echo "${name}: committed")`;
    const again = await launch(h, taskId, {
      command: ['sh', '-c', `${names.map(commit).join('; ')}; echo ${TRIES_ENDED}; sleep 600`],
    });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    const out = await agentOutputUntil(h, again.body.executionId, TRIES_ENDED);
    for (const name of names) {
      expect(out).toContain(`${name}: committed`);
      const worktree = worktreePath(h.config.workspaceRoot, taskId, name);
      expect(statSync(worktree).uid).toBe(uid);
      expect(statSync(path.join(worktree, 'again.txt')).uid).toBe(uid);
    }
  });
});
