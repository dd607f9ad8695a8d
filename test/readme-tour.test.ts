/**
 * The README's tour, the bash block between its `tour:begin` and `tour:end` markers, run as it
 * stands with `bash -euo pipefail` against a `make start` of this file's own (its own four ports and
 * data folder, told to the tour as a person would: TWS_API_PORT and TWS_DATA_DIR). The tour's steps
 * are `tws` commands (`npx tws` in the checkout): repo add, task new, launch -f of an agent that
 * commits, status, diff, merge, board. Judged by the world it leaves, not by its exit code alone:
 * each `# → …` comment is what its line printed, the agent's log named the task's branch, the
 * task's merge row says merged, and the demo repository's main holds the agent's file in one
 * squash commit. Run with a wrong token or on a port nothing listens on, it stops at the first
 * command and says why on stderr. docs/api.md's walk-through with curl (stop, resume, archive,
 * unarchive, a consented delete) is run the same way and judged by the task gone, its cleanup jobs
 * and the uncommitted file on its saved-work ref. The same
 * `make start` shows its terminal: the banner and the launcher's own lines, the services' logs in
 * the data folder.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { processesOf } from './support/processes';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/harness';
import { waitUntil } from './support/scenario';

const root = path.resolve(__dirname, '..');
let scratch = '';
let dataDir = '';
let ports = { api: 0, pg: 0, temporal: 0, ui: 0 };
let make: ChildProcess | null = null;
let stdout = '';
let stderr = '';

/** A person's shell: none of the variables that point the service elsewhere, nor an enclosing make's or vitest's. */
function personEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (
      !/^(TWS_|DATABASE_URL$|TEMPORAL_|VITEST|NODE_OPTIONS$|MAKELEVEL$|MAKEFLAGS$|MFLAGS$|GIT_CONFIG_GLOBAL$)/.test(key)
    )
      env[key] = value;
  return env;
}

/** A tour: the one fenced block between a page's markers (the README's `tour`, docs/api.md's `curl-tour`). */
function tourBlock(page = 'README.md', marker = 'tour'): string {
  const text = readFileSync(path.join(root, page), 'utf8');
  const tour = new RegExp(`<!-- ${marker}:begin -->\\n([\\s\\S]*?)<!-- ${marker}:end -->`).exec(text)?.[1];
  expect(tour, `${page} has its ${marker} markers`).toBeDefined();
  const blocks = [...tour!.matchAll(/^```(?:bash|sh)\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  expect(blocks).toHaveLength(1);
  return blocks[0]!;
}

/** The block run as pasted into bash, in the checkout, with the shell's own TMPDIR in this file's scratch. */
function runTour(
  extraEnv: Record<string, string>,
  block = tourBlock(),
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn('bash', ['-euo', 'pipefail', '-c', block], {
    cwd: root,
    env: {
      ...personEnv(),
      TMPDIR: scratch,
      TWS_API_PORT: String(ports.api),
      TWS_DATA_DIR: dataDir,
      // The host's registry of instances is this file's own: other files' launchers run meanwhile.
      TWS_INSTANCE_REGISTRY: path.join(scratch, 'instances'),
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, out, err })));
}

/** Each `# → <what it prints>` of the block, in order, as a pattern of one whole line: `…` any text, `<taskId>` the task's id. */
function promisedLines(block: string): RegExp[] {
  return [...block.matchAll(/# → (.*)$/gm)].map(
    (m) =>
      new RegExp(
        `^${m[1]!
          .trim()
          .split(/(…|<taskId>)/)
          .map((part) =>
            part === '…' ? '.*' : part === '<taskId>' ? '[0-9a-f-]{36}' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
          )
          .join('')}$`,
      ),
  );
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'tws-tour-'));
  dataDir = path.join(scratch, 'data');
  // Embedded PostgreSQL runs as the postgres account under root, and agents as uids of their own.
  await chmod(scratch, 0o755);
  const [api, pg, temporal, ui] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  ports = { api, pg, temporal, ui };
  make = spawn('make', ['start'], {
    cwd: root,
    env: {
      ...personEnv(),
      TWS_DATA_DIR: dataDir,
      // The host's registry of instances is this file's own: other files' launchers run meanwhile.
      TWS_INSTANCE_REGISTRY: path.join(scratch, 'instances'),
      TWS_API_PORT: String(api),
      TWS_PG_PORT: String(pg),
      TWS_TEMPORAL_PORT: String(temporal),
      TWS_TEMPORAL_UI_PORT: String(ui),
    },
    detached: true, // a process group of its own, as a terminal's foreground job: Ctrl-C reaches all of it
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  make.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  make.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // Its banner, or its end: either is waited for (at most 3 minutes), then told apart.
  await waitUntil(
    async () => stdout.includes('task-workspaces is running') || make!.exitCode !== null,
    'make start to come up',
    180_000,
    async () => ({ stdout, stderr }),
  );
  if (!stdout.includes('task-workspaces is running'))
    throw new Error(`make start did not come up (exit ${make.exitCode}):\n${stdout}\n${stderr}`);
}, 200_000);

afterAll(async () => {
  if (make?.pid && make.exitCode === null && make.signalCode === null) {
    const exited = new Promise((resolve) => make!.once('exit', resolve));
    process.kill(-make.pid, 'SIGINT'); // Ctrl-C
    await Promise.race([exited, new Promise((r) => setTimeout(r, 60_000))]);
  }
  if (dataDir) {
    for (const pid of await processesOf(dataDir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  if (scratch) await rm(scratch, { recursive: true, force: true });
}, 90_000);

describe("the README's tour, as pasted", () => {
  it('adds a repository, makes a task, runs an agent that commits, reads its status and diff, merges it and shows the board; every line prints what its comment says', async () => {
    const block = tourBlock();
    expect(block).toContain('npx --no-install tws');
    expect(block).not.toMatch(/curl|localhost:8080/);
    const run = await runTour({});
    expect(run.code, `${run.out}\n${run.err}`).toBe(0);

    // Each promised line, in order; nothing else on stdout.
    const lines = run.out.trimEnd().split('\n');
    const promised = promisedLines(block);
    expect(lines).toHaveLength(promised.length);
    lines.forEach((line, i) => expect(line).toMatch(promised[i]!));

    // The agent ran in the task's worktree, on its branch; its session ended exited.
    const taskId = /^## tws\/([0-9a-f-]{36})\/work$/m.exec(run.out)![1]!;
    const sessionId = /^session ([0-9a-f-]{36}) exited$/m.exec(run.out)![1]!;
    const { userToken } = JSON.parse(readFileSync(path.join(dataDir, 'secrets.json'), 'utf8')) as {
      userToken: string;
    };
    const get = async (route: string) =>
      (
        await fetch(`http://127.0.0.1:${ports.api}${route}`, { headers: { authorization: `Bearer ${userToken}` } })
      ).json() as Promise<any>;
    const session = await get(`/v1/sessions/${sessionId}`);
    expect(session).toMatchObject({ taskId, state: 'exited' });
    // The world it left: one merge of the task, merged; the task merged and active.
    const merges = await get(`/v1/tasks/${taskId}/merges`);
    expect(merges.items.map((m: { state: string; strategy: string }) => [m.state, m.strategy])).toEqual([
      ['merged', 'squash'],
    ]);
    const task = await get(`/v1/tasks/${taskId}`);
    expect(task).toMatchObject({ title: 'Fix the bug', state: 'active', merged: expect.anything() });
    // The demo repository's main: the init commit and one squash commit holding the agent's file.
    const here = readdirSync(scratch).filter((name) => name.startsWith('tmp.'));
    expect(here).toHaveLength(1);
    const demo = path.join(scratch, here[0]!, 'demo');
    const git = (...args: string[]) => execFileSync('git', ['-C', demo, ...args], { encoding: 'utf8' });
    expect(git('log', '--format=%s', 'main')).toBe('Fix the bug\ninit\n');
    expect(git('show', 'main:fix.txt')).toBe('fixed\n');
  }, 240_000);

  it("docs/api.md's walk-through with curl: a repository, a task and an agent through stop, resume, archive, unarchive and a consented delete; every line prints what its comment says", async () => {
    const block = tourBlock('docs/api.md', 'curl-tour');
    expect(block).not.toMatch(/npx tws|localhost:8080|curl -s /);
    // A TMPDIR of its own (searchable by the agents' uids), apart from the README tour's.
    const tmp = await mkdtemp(path.join(scratch, 'curl-'));
    await chmod(tmp, 0o755);
    const run = await runTour({ TMPDIR: tmp }, block);
    expect(run.code, `${run.out}\n${run.err}`).toBe(0);

    // Each promised line, in order; nothing else on stdout.
    const lines = run.out.trimEnd().split('\n');
    const promised = promisedLines(block);
    expect(lines).toHaveLength(promised.length);
    lines.forEach((line, i) => expect(line).toMatch(promised[i]!));

    // The agent ran in the task's worktree, on its branch.
    const taskId = /^## tws\/([0-9a-f-]{36})\/work$/m.exec(run.out)![1]!;
    const workspace = lines[1]!;
    expect(workspace).toContain(`task-${taskId}`);
    // The refusal without consent was said, with its answer.
    expect(run.err).toContain('"code":"task_delete_dirty_worktree"');

    // The world it left: the task gone, its worktree folder gone, both cleanup jobs succeeded.
    const { userToken } = JSON.parse(readFileSync(path.join(dataDir, 'secrets.json'), 'utf8')) as {
      userToken: string;
    };
    const get = (route: string) =>
      fetch(`http://127.0.0.1:${ports.api}${route}`, { headers: { authorization: `Bearer ${userToken}` } });
    expect((await get(`/v1/tasks/${taskId}`)).status).toBe(404);
    expect(existsSync(workspace)).toBe(false);
    const jobs = (await (await get(`/v1/cleanup-jobs?taskId=${taskId}`)).json()) as {
      items: { trigger: string; state: string; report: { worktrees: { outcome: string; savedRef?: string }[] } }[];
    };
    expect(jobs.items.map((j) => [j.trigger, j.state, j.report.worktrees.map((w) => w.outcome)]).sort()).toEqual([
      ['archive', 'succeeded', ['kept_dirty']],
      ['delete', 'succeeded', ['saved_and_removed']],
    ]);
    // The uncommitted file is on the saved-work ref of the demo repository; the merged branch is gone.
    const here = readdirSync(tmp).filter((name) => name.startsWith('tmp.'));
    expect(here).toHaveLength(1);
    const demo = path.join(tmp, here[0]!, 'demo');
    const savedRef = jobs.items.find((j) => j.trigger === 'delete')!.report.worktrees[0]!.savedRef!;
    expect(savedRef).toMatch(new RegExp(`^refs/task-workspaces/saved/${taskId}/`));
    const git = (...args: string[]) => execFileSync('git', ['-C', demo, ...args], { encoding: 'utf8' });
    expect(git('show', `${savedRef}:notes.txt`)).toBe('draft\n'); // a stash entry whose tree is the work tree
    expect(git('branch', '--list', `tws/${taskId}/work`)).toBe('');
  }, 240_000);

  it('stops at the first command and says why, with a wrong token or on a port nothing listens on', async () => {
    const wrongToken = await runTour({ TWS_USER_TOKEN: 'not-the-token' });
    expect(wrongToken.code).not.toBe(0);
    expect(wrongToken.out).toBe('');
    // tws's line with the API's code, then the field that could not be read.
    expect(wrongToken.err).toMatch(/^tws: refused \(unauthorized: /m);
    expect(wrongToken.err).toMatch(/^no id in this answer:/m);

    const closed = await freePort();
    const nobody = await runTour({ TWS_API_URL: `http://127.0.0.1:${closed}`, TWS_USER_TOKEN: 'any' });
    expect(nobody.code).not.toBe(0);
    expect(nobody.out).toBe('');
    expect(nobody.err).toMatch(new RegExp(`^tws: the API at http://127\\.0\\.0\\.1:${closed} does not answer`, 'm'));
  }, 120_000);

  it("keeps make start's terminal to the banner and the launcher's lines; the services log to the data folder", async () => {
    const log = path.join(dataDir, 'services.log');
    expect(stdout).toContain(`  Logs:         ${log}`);
    const terminal = `${stdout}\n${stderr}`.split('\n').filter((line) => line.trim());
    // No JSON log line, no SDK warning, no pip or npm chatter: set-up, banner, launcher.
    expect(terminal.filter((line) => /^\{|\[WARN\]|^WARNING|^added \d+ packages/.test(line))).toEqual([]);
    // What the services said is in the log (the launcher's readiness probe among it); the file is the service's alone.
    const logged = readFileSync(log, 'utf8');
    expect(logged).toMatch(/^\{"level":30,.*"name":"gateway".*"url":"\/readyz"/m);
    expect(logged).toMatch(/^\{"level":30,.*"name":"worker".*"msg":"worker running"/m);
    expect(statSync(log).mode & 0o777).toBe(0o600);
  });
});
