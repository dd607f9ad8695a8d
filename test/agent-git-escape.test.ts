/**
 * A sandboxed agent cannot make the service run its code through git. As a user would
 * find it: an agent writes the repository's hooks, its config (fsmonitor, a filter), its
 * attributes and another worktree's admin folder. Each write is refused in the sandbox, its own
 * commits still work, and the service's git that follows (the git status observation, a first
 * launch of another task on the same repository) runs nothing: no marker, no secret read.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentIsolation } from '../executors/host/agent-sandbox';
import { worktreePath } from '../domain/task-layout';
import { containerEngineSocket, containerSettings, removeHostContainers } from './support/container-engine';
import { harnessesPerTest, OPERATOR_TOKEN, type Harness } from './support/harness';
import { agentOutputUntil, createTask, launch, registerRepo } from './support/scenario';
import { git, makeRepo } from './support/world';

const { harness, cleanups } = harnessesPerTest();

/** What the agent tries, each line reporting `<what>: written` or `<what>: refused`. */
function attempts(marks: string, secrets: string): string {
  const payload = `#!/bin/sh\\nid > ${marks}/ran-as; cat ${secrets} > ${marks}/secrets; touch ${marks}/$(basename $0)\\n`;
  const tries = [
    ['post-checkout hook', `printf '${payload}' > "$d/hooks/post-checkout" && chmod +x "$d/hooks/post-checkout"`],
    [
      'reference-transaction hook',
      `printf '${payload}' > "$d/hooks/reference-transaction" && chmod +x "$d/hooks/reference-transaction"`,
    ],
    ['fsmonitor script', `printf '${payload}' > "$d/fsmonitor.sh" && chmod +x "$d/fsmonitor.sh"`],
    ['fsmonitor config', `git config core.fsmonitor "$d/fsmonitor.sh"`],
    ['filter config', `git config filter.evil.clean "touch ${marks}/filter; cat"`],
    ['attributes', `echo "* filter=evil" >> "$d/info/attributes"`],
    ['hooksPath config', `git config core.hooksPath "$d/hooks"`],
  ];
  return tries
    .map(([what, cmd]) => `if (${cmd}) 2>/dev/null; then echo "${what}: written"; else echo "${what}: refused"; fi`)
    .join('; ');
}

const TRIED = [
  'post-checkout hook',
  'reference-transaction hook',
  'fsmonitor config',
  'filter config',
  'attributes',
  'hooksPath config',
];

/** A worktree-workspace agent (`launchBody` says where it runs) tries every write; the service's git after it runs nothing. */
async function armedAgent(h: Harness, launchBody: Record<string, unknown>): Promise<void> {
  const secrets = path.join(h.config.dataDir, 'secrets.json');
  writeFileSync(secrets, JSON.stringify({ operatorToken: OPERATOR_TOKEN }), { mode: 0o600 });
  const marks = path.join(h.scratch, 'marks');
  mkdirSync(marks);
  const repo = makeRepo(h.scratch, 'armed');
  const repositoryId = await registerRepo(h, repo, 'armed');
  const configBefore = readFileSync(path.join(repo, '.git/config'), 'utf8');
  const other = await createTask(h, [repositoryId]);
  expect((await launch(h, other, { ...launchBody, command: ['sh', '-c', 'sleep 600'] })).status).toBe(201);

  const taskId = await createTask(h, [repositoryId]);
  const script = [
    'd=$(git rev-parse --git-common-dir)',
    attempts(marks, secrets),
    `if echo evil > "$d/worktrees/armed/HEAD" 2>/dev/null; then echo "other admin folder: written"; else echo "other admin folder: refused"; fi`,
    'echo work > agent.txt && git add agent.txt && git -c user.name=agent -c user.email=agent@example.com commit -q -m "agent work" && echo committed',
    'git -c user.name=agent -c user.email=agent@example.com commit -q --amend -m "agent work, amended" && echo amended',
    'echo untracked > dirty.txt',
    'echo done; sleep 600',
  ].join('; ');
  const res = await launch(h, taskId, { ...launchBody, command: ['sh', '-c', script] });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const out = await agentOutputUntil(h, res.body.executionId, 'done');
  for (const what of [...TRIED, 'other admin folder']) expect(out).toContain(`${what}: refused`);
  expect(out).toContain('committed');
  expect(out).toContain('amended');
  // The repository is as the user left it.
  expect(readFileSync(path.join(repo, '.git/config'), 'utf8')).toBe(configBefore);
  expect(readdirSync(path.join(repo, '.git/hooks')).filter((f) => !f.endsWith('.sample'))).toEqual([]);
  expect(existsSync(path.join(repo, '.git/info/attributes'))).toBe(false);

  // The service's git next to it: the status observation and a first launch on the same repository.
  const status = await h.api('GET', `/v1/tasks/${taskId}/git-status`);
  expect(status.status, JSON.stringify(status.body)).toBe(200);
  // Its commits are home once the status read them.
  expect(git(worktreePath(h.config.workspaceRoot, taskId, 'armed'), 'log', '-1', '--format=%s')).toBe(
    'agent work, amended',
  );
  const third = await createTask(h, [repositoryId]);
  expect((await launch(h, third, { command: ['sh', '-c', 'sleep 600'] })).status).toBe(201);
  expect(readdirSync(marks)).toEqual([]);
}

describe('an agent cannot run code as the service through git', () => {
  it('a worktree agent: every write that steers git is refused, its commits work, and the service git after it runs nothing', async () => {
    const h = await harness();
    expect(await agentIsolation(h.config.agentSandbox)).toBe('bwrap');
    await armedAgent(h, {});
  });

  it('a container agent: the same writes are refused in its container, and the service git after it runs nothing', async () => {
    const socket = await containerEngineSocket();
    const h = await harness({ containers: containerSettings(socket), agentNetwork: 'none' });
    cleanups.push(() => removeHostContainers(h.config.hostId));
    await armedAgent(h, { executorType: 'container' });
  });

  it('a local agent in the source checkout: the same writes are refused, and the service git after it runs nothing', async () => {
    const h = await harness();
    const secrets = path.join(h.config.dataDir, 'secrets.json');
    writeFileSync(secrets, JSON.stringify({ operatorToken: OPERATOR_TOKEN }), { mode: 0o600 });
    const marks = path.join(h.scratch, 'marks');
    mkdirSync(marks);
    const repo = makeRepo(h.scratch, 'own');
    const configBefore = readFileSync(path.join(repo, '.git/config'), 'utf8');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'own')]);
    const script = [
      'd=$(git rev-parse --git-common-dir)',
      attempts(marks, secrets),
      'if mv .git .git-moved 2>/dev/null; then echo "git folder move: written"; else echo "git folder move: refused"; fi',
      'echo local > local.txt && git add local.txt && git -c user.name=agent -c user.email=agent@example.com commit -q -m local && echo committed',
      'echo done; sleep 600',
    ].join('; ');
    const res = await launch(h, taskId, { executorType: 'local', command: ['sh', '-c', script] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const out = await agentOutputUntil(h, res.body.executionId, 'done');
    for (const what of [...TRIED, 'git folder move']) expect(out).toContain(`${what}: refused`);
    expect(out).toContain('committed');
    expect(git(repo, 'log', '-1', '--format=%s')).toBe('local');
    expect(readFileSync(path.join(repo, '.git/config'), 'utf8')).toBe(configBefore);
    expect(readdirSync(path.join(repo, '.git/hooks')).filter((f) => !f.endsWith('.sample'))).toEqual([]);
    const status = await h.api('GET', `/v1/tasks/${taskId}/git-status`);
    expect(status.status, JSON.stringify(status.body)).toBe(200);
    expect(readdirSync(marks)).toEqual([]);
  });
});
