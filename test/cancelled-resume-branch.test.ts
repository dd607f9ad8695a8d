/**
 * A resume stopped while it re-makes an unarchived task's workspace never deletes the task's kept
 * branch: its undo removes only what its own step made, and a branch it found (kept by the archive
 * so that unarchive can bring the workspace back) is not among that. The stop lands at a range of
 * moments, before, while and after the resume publishes its inventory; after each, every commit
 * the task made is on a ref and the task launches again with it. For each executor that makes a
 * workspace (`local` works in the checkout itself and makes no branch).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskBranchName, taskDirName } from '../domain/task-layout';
import { closeSshConnections } from '../ssh/connection';
import { runRemote } from '../ssh/remote-exec';
import { archive, waitForJob } from './support/cleanup';
import { containerEngineSocket, containerSettings, removeHostContainers } from './support/container-engine';
import { harnessesPerTest, OPERATOR_TOKEN, type Harness } from './support/harness';
import { agentOutputUntil, createTask, launch, registerRepo } from './support/scenario';
import { startSshServer, targetFields, type SshServer } from './support/ssh-server';
import { git, makeRepo } from './support/world';

const { harness, cleanups } = harnessesPerTest();
let h: Harness;
let ssh: SshServer;
let sshTargetId: string;

beforeAll(async () => {
  const socket = await containerEngineSocket();
  [h, ssh] = await Promise.all([
    harness({ containers: containerSettings(socket), agentNetwork: 'none' }),
    startSshServer(),
  ]);
  cleanups.push(() => removeHostContainers(h.config.hostId));
  const target = await h.api('POST', '/v1/ssh-targets', { name: 'box', ...targetFields(ssh) }, OPERATOR_TOKEN);
  expect(target.status, JSON.stringify(target.body)).toBe(201);
  sshTargetId = target.body.id;
}, 180_000);
afterAll(async () => {
  await closeSshConnections();
  await ssh?.stop();
});

/** The refs (of any kind) that contain a commit, read by the repository's own git. */
const refsContaining = (repo: string, commit: string): string[] =>
  git(repo, 'for-each-ref', '--contains', commit, '--format=%(refname)').split('\n').filter(Boolean);

type Kind = 'worktree' | 'container' | 'ssh';
const launchBody = (kind: Kind) => (kind === 'ssh' ? { executorType: kind, sshTargetId } : { executorType: kind });

/** A commit in the task's workspace, made as its owner would: on the host as root, on the target as the target's user. */
async function commitInWorkspace(kind: Kind, taskId: string, name: string): Promise<string> {
  if (kind !== 'ssh') {
    const worktree = path.join(h.config.workspaceRoot, taskDirName(taskId), name);
    writeFileSync(path.join(worktree, 'work.txt'), 'the task made this\n');
    git(worktree, 'add', 'work.txt');
    git(worktree, 'commit', '-q', '-m', 'the task commits');
    return git(worktree, 'rev-parse', 'HEAD');
  }
  const target = { id: sshTargetId, ...targetFields(ssh) };
  const clone = path.join(ssh.workspaceRoot, taskDirName(taskId), name);
  const res = await runRemote(
    target,
    'cd -- "$1" && echo made > work.txt && git add work.txt && git -c user.name=t -c user.email=t@example.com commit -q -m work && git rev-parse HEAD',
    [clone],
  );
  expect(res.code, res.stderr.toString()).toBe(0);
  return res.stdout.toString().trim();
}

/**
 * A task with a commit of its own on its branch, archived (its workspace removed, its branch kept,
 * an SSH clone's commits brought home first) and unarchived: the next resume makes the workspace
 * again from the kept branch.
 */
async function unarchivedWithCommit(kind: Kind, repo: string, repositoryId: string, name: string) {
  const taskId = await createTask(h, [repositoryId]);
  const first = await launch(h, taskId, launchBody(kind));
  expect(first.status, JSON.stringify(first.body)).toBe(201);
  const commit = await commitInWorkspace(kind, taskId, name);
  expect((await h.api('POST', `/v1/sessions/${first.body.sessionId}/stop`)).status).toBe(200);
  await waitForJob(h, (await archive(h, taskId)).operationId);
  expect((await h.api('POST', `/v1/tasks/${taskId}/unarchive`)).status).toBe(200);
  expect(refsContaining(repo, commit)).toContain(`refs/heads/${taskBranchName(taskId)}`);
  return { taskId, sessionId: first.body.sessionId as string, commit };
}

describe('a resume stopped while it re-makes the workspace keeps the task branch', () => {
  it.each<Kind>(['worktree', 'container', 'ssh'])(
    '%s: a stop 0–300 ms after the resume began never leaves a commit of the task on no ref',
    async (kind) => {
      const name = `kept-${kind}`;
      const repo = makeRepo(h.scratch, name);
      const repositoryId = await registerRepo(h, repo, name);
      const outcomes: string[] = [];
      // A loaded machine may end every resume before its stop lands: more tries at 0 ms then, up to five.
      const delays = [0, 25, 50, 100, 300];
      for (let i = 0; i < delays.length; i++) {
        const delay = delays[i]!;
        if (i === delays.length - 1 && delays.length < 10 && !outcomes.some((o) => /launch_cancelled/.test(o)))
          delays.push(0);
        const { taskId, sessionId, commit } = await unarchivedWithCommit(kind, repo, repositoryId, name);
        const resuming = h.api('POST', `/v1/sessions/${sessionId}/resume`, { args: [] });
        await new Promise((r) => setTimeout(r, delay));
        const stopped = await h.api('POST', `/v1/sessions/${sessionId}/stop`);
        expect(stopped.status, JSON.stringify(stopped.body)).toBeLessThan(500);
        const resumed = await resuming;
        outcomes.push(`${delay} ms: ${resumed.status} ${resumed.body?.error?.code ?? resumed.body?.state ?? ''}`);
        // Whatever the resume answered, the task's commit is on its branch.
        expect(refsContaining(repo, commit), outcomes.at(-1)).toContain(`refs/heads/${taskBranchName(taskId)}`);
        // And the task works on with it: the next launch's workspace has the commit checked out.
        const again = await launch(h, taskId, {
          ...launchBody(kind),
          command: ['sh', '-c', 'git log --format=%H -1; echo ready; sleep 600'],
        });
        expect(again.status, `${outcomes.at(-1)}; then ${JSON.stringify(again.body)}`).toBe(201);
        expect(await agentOutputUntil(h, again.body.executionId, 'ready')).toContain(commit);
        expect((await h.api('POST', `/v1/sessions/${again.body.sessionId}/stop`)).status).toBe(200);
      }
      // The range covered a stop that landed before the resume ended (it was cancelled at least once).
      expect(
        outcomes.some((o) => /launch_cancelled/.test(o)),
        outcomes.join('; '),
      ).toBe(true);
    },
  );
});
