/**
 * The service's git runs no program a repository names. Each vector arms a real
 * repository the way an agent (or a `none` sandbox) could; every git command the product runs,
 * through git/git.ts and the SSH targets' `g`, then runs next to it, and the marker file the
 * vector writes must never appear. The same commands with plain git show that each armed
 * vector does fire (so the assertion can fail).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { addWorktree, listWorktrees, pruneWorktrees, removeWorktree, worktreeIdentity } from '../git/worktrees';
import { aheadBehind, fileStatus, worktreeDirtiness } from '../git/worktree-status';
import { branchCommits, branchesMergedInto, deleteBranchIfAt, resolveCommit } from '../git/branches';
import { checkoutIdentity, commonDir, currentBranch, showToplevel } from '../git/checkout';
import { gitAt } from '../git/git';
import { saveWorkOnRef } from '../git/saved-work';
import { checkRepository } from '../git/repository-check';
import { parseConfig, repositoryNamedSections } from '../git/repository-config';
import { REMOTE_GIT_FUNCTION } from '../ssh/remote-git';
import { git, makeRepo } from './support/world';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'tws-git-hardening-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const OPTIONS = { binary: 'git' };
const HOOKS = [
  'post-checkout',
  'reference-transaction',
  'post-index-change',
  'pre-auto-gc',
  'pre-commit',
  'post-commit',
  'post-rewrite',
  'pre-push',
];

/** A script that leaves `marks/<name>` behind when run; a filter's also passes its input through. */
function program(dir: string, marks: string, name: string, filter = false): string {
  const file = path.join(dir, `${name}.sh`);
  writeFileSync(file, `#!/bin/sh\ntouch '${marks}/${name}'\n${filter ? 'cat' : 'exit 1'}\n`);
  chmodSync(file, 0o755);
  return file;
}

interface Armed {
  repo: string;
  marks: string;
  /** The vectors that plain git fires in the commands below (the others have no effect on them). */
  firing: string[];
}

type Vector = (repo: string, marks: string, outside: string) => string[];

const VECTORS: Record<string, Vector> = {
  hooks: (repo, marks, outside) => {
    for (const hook of HOOKS) {
      const p = program(outside, marks, `hook-${hook}`);
      writeFileSync(path.join(repo, '.git/hooks', hook), `#!/bin/sh\n'${p}' </dev/null\nexit 0\n`);
      chmodSync(path.join(repo, '.git/hooks', hook), 0o755);
    }
    return ['hook-post-checkout', 'hook-reference-transaction'];
  },
  'hooks through core.hooksPath': (repo, marks, outside) => {
    const dir = path.join(outside, 'hooks');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'post-checkout'), `#!/bin/sh\ntouch '${marks}/hookspath'\n`);
    chmodSync(path.join(dir, 'post-checkout'), 0o755);
    git(repo, 'config', 'core.hooksPath', dir);
    return ['hookspath'];
  },
  fsmonitor: (repo, marks, outside) => {
    git(repo, 'config', 'core.fsmonitor', program(outside, marks, 'fsmonitor'));
    return ['fsmonitor'];
  },
  'filter from config and a committed .gitattributes': (repo, marks, outside) => {
    writeFileSync(path.join(repo, '.gitattributes'), '*.txt filter=evil\n');
    writeFileSync(path.join(repo, 'data.txt'), 'data\n');
    git(repo, 'add', '.gitattributes', 'data.txt');
    git(repo, 'commit', '-q', '-m', 'attributes');
    git(repo, 'config', 'filter.evil.smudge', program(outside, marks, 'smudge', true));
    git(repo, 'config', 'filter.evil.clean', program(outside, marks, 'clean', true));
    git(repo, 'config', 'filter.evil.required', 'true');
    return ['smudge', 'clean'];
  },
  'filter process from config and info/attributes': (repo, marks, outside) => {
    git(repo, 'config', 'filter.proc.process', program(outside, marks, 'process'));
    mkdirSync(path.join(repo, '.git/info'), { recursive: true });
    writeFileSync(path.join(repo, '.git/info/attributes'), '* filter=proc\n');
    return ['process'];
  },
  'a driver in an included file outside the repository': (repo, marks, outside) => {
    const included = path.join(outside, 'evil.config');
    writeFileSync(
      included,
      `[filter "Inc=luded.x"]\n\tsmudge = ${program(outside, marks, 'included-smudge', true)}\n\tclean = ${program(outside, marks, 'included-clean', true)}\n[core]\n\tfsmonitor = ${program(outside, marks, 'included-fsmonitor')}\n`,
    );
    writeFileSync(path.join(repo, '.gitattributes'), '* filter=Inc=luded.x\n');
    writeFileSync(path.join(repo, 'more.txt'), 'more\n');
    git(repo, 'add', '.gitattributes', 'more.txt');
    git(repo, 'commit', '-q', '-m', 'included');
    git(repo, 'config', 'includeIf.gitdir:/.path', included);
    return ['included-smudge', 'included-clean', 'included-fsmonitor'];
  },
  'diff textconv and external diff': (repo, marks, outside) => {
    git(repo, 'config', 'diff.evil.textconv', program(outside, marks, 'textconv'));
    git(repo, 'config', 'diff.external', program(outside, marks, 'external-diff'));
    writeFileSync(path.join(repo, '.git/info/attributes'), '* diff=evil\n');
    return [];
  },
  'ssh command, proxy and ext transport': (repo, marks, outside) => {
    git(repo, 'config', 'core.sshCommand', program(outside, marks, 'ssh-command'));
    git(repo, 'config', 'core.gitProxy', program(outside, marks, 'git-proxy'));
    git(repo, 'config', 'protocol.ext.allow', 'always');
    git(repo, 'remote', 'add', 'origin', 'ssh://example.invalid/repo.git');
    git(repo, 'remote', 'add', 'ext', `ext::${program(outside, marks, 'ext')} %G`);
    return ['ssh-command', 'ext'];
  },
  'pager, editor, askpass and credential helper': (repo, marks, outside) => {
    git(repo, 'config', 'core.pager', program(outside, marks, 'pager'));
    git(repo, 'config', 'core.editor', program(outside, marks, 'editor'));
    git(repo, 'config', 'core.askPass', program(outside, marks, 'askpass'));
    git(repo, 'config', 'credential.helper', `!${program(outside, marks, 'credential')}`);
    return [];
  },
};

function arm(name: string, vector: Vector): Armed {
  const base = mkdtempSync(path.join(scratch, 'v-'));
  const marks = path.join(base, 'marks');
  const outside = path.join(base, 'outside');
  mkdirSync(marks);
  mkdirSync(outside);
  const repo = makeRepo(base, 'repo');
  mkdirSync(path.join(repo, '.git/info'), { recursive: true });
  return { repo, marks, firing: vector(repo, marks, outside) };
}

const fired = (marks: string): string[] => readdirSync(marks).sort();

/** Every git command the product runs on a host, in the order a task's life runs them. */
async function productCommands(repo: string): Promise<void> {
  const worktree = path.join(path.dirname(repo), 'task-1', 'repo');
  const check = await checkRepository(
    { path: repo },
    {
      gitBinary: 'git',
      repositoryRoots: [],
      workspaceRoot: path.join(path.dirname(repo), 'ws'),
      dataDir: path.join(path.dirname(repo), 'data'),
    },
  );
  expect(check.ok).toBe(true);
  const source = gitAt(repo, OPTIONS);
  await addWorktree(source, worktree, 'tws/1', 'main');
  await listWorktrees(source);
  expect(await worktreeIdentity(worktree, OPTIONS)).not.toBeNull();
  await checkoutIdentity(worktree, OPTIONS);
  await currentBranch(worktree, OPTIONS);
  await showToplevel(worktree, OPTIONS);
  await commonDir(worktree, OPTIONS);
  writeFileSync(path.join(worktree, 'data.txt'), 'changed by the agent\n');
  writeFileSync(path.join(worktree, 'new.txt'), 'new\n');
  expect((await fileStatus(worktree, OPTIONS)).length).toBeGreaterThan(0);
  expect((await worktreeDirtiness(worktree, OPTIONS)).state).toBe('dirty');
  await aheadBehind(worktree, 'main', OPTIONS);
  await branchCommits(source, ['main', 'tws/1']);
  await branchesMergedInto(source, 'main', ['tws/1']);
  expect((await saveWorkOnRef(worktree, () => 'refs/tws/saved/1', 'saved', OPTIONS))?.commit).toMatch(/^[0-9a-f]{40}$/);
  // The SSH executor's way home: a bundle fetched into the host repository.
  const bundle = path.join(path.dirname(repo), 'b.bundle');
  await source.raw(['bundle', 'create', '--quiet', bundle, 'refs/tws/saved/1']);
  await source.raw([
    'fetch',
    '--quiet',
    '--no-tags',
    '--no-write-fetch-head',
    bundle,
    'refs/tws/saved/1:refs/tws/fetched/1',
  ]);
  await source.raw(['bundle', 'unbundle', bundle]);
  // A transport the product never uses is refused, not run.
  await expect(source.raw(['fetch', 'origin'])).rejects.toThrow();
  await expect(source.raw(['ls-remote', 'ext'])).rejects.toThrow();
  await removeWorktree(source, worktree, true);
  await pruneWorktrees(source);
  const head = await resolveCommit(source, 'refs/heads/tws/1');
  await deleteBranchIfAt(source, 'tws/1', head!);
}

/** The same commands as a plain git of the user would run them: the control. */
function plainCommands(repo: string): void {
  const worktree = path.join(path.dirname(repo), 'plain', 'repo');
  const run = (dir: string, ...args: string[]) =>
    spawnSync('git', args, {
      cwd: dir,
      stdio: 'ignore',
      timeout: 20_000,
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@e',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@e',
      },
    });
  run(repo, 'worktree', 'add', '--no-track', '-b', 'plain', worktree, 'main');
  if (existsSync(worktree)) writeFileSync(path.join(worktree, 'data.txt'), 'changed\n');
  run(worktree, 'status', '--porcelain');
  run(worktree, 'add', '--all');
  run(repo, 'fetch', 'origin');
  run(repo, 'ls-remote', 'ext');
  run(repo, 'worktree', 'remove', '--force', worktree);
}

/** The SSH targets' `g`, run here on the armed repository by bash as a target runs it. */
function remoteCommands(repo: string): void {
  const clone = path.join(path.dirname(repo), 'clone');
  execFileSync('git', ['clone', '-q', '--no-checkout', repo, clone], {
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
  });
  execFileSync('cp', ['-a', path.join(repo, '.git', 'config'), path.join(clone, '.git', 'config')]);
  execFileSync('cp', ['-a', path.join(repo, '.git', 'hooks/.'), path.join(clone, '.git', 'hooks')]);
  execFileSync('cp', ['-a', path.join(repo, '.git', 'info/.'), path.join(clone, '.git', 'info')]);
  const script = `${REMOTE_GIT_FUNCTION}
set -e
cd "$1"
g checkout -q -b tws/1 origin/main 2>/dev/null || g checkout -q -b tws/1 main
echo changed > data.txt; echo new > new.txt
g --no-optional-locks status --porcelain=v1 -z --untracked-files=all >/dev/null
g -C "$1" add --all
g stash create >/dev/null
g rev-parse --verify --quiet HEAD >/dev/null
`;
  const res = spawnSync('bash', ['-c', script, 'remote', clone], { encoding: 'utf8' });
  expect(res.status, res.stderr).toBe(0);
}

describe('the service git runs no program a repository names', () => {
  for (const [name, vector] of Object.entries(VECTORS)) {
    it(`${name}: no product git command runs it, on the host or through the SSH targets' git`, async () => {
      const armed = arm(name, vector);
      await productCommands(armed.repo);
      remoteCommands(armed.repo);
      expect(fired(armed.marks)).toEqual([]);
      // The control: the user's plain git runs what the vector armed.
      plainCommands(armed.repo);
      for (const mark of armed.firing) expect(fired(armed.marks), `plain git ran ${mark}`).toContain(mark);
    });
  }

  it('every driver the config files define is found, with their includes and any subsection name', () => {
    const { drivers, includes } = parseConfig(
      '[filter "a b\\"c"]\n\tsmudge = x # comment\n[diff.Old]\n  textconv = "y;z" \\\n  continued\n[merge "m"] driver = z\n[include]\n\tpath = ../x.config\n[includeIf "gitdir:~/"]\n\tpath = "~/y.config"\n[core] bare',
    );
    expect(drivers).toEqual([
      ['filter', 'a b"c'],
      ['diff', 'old'],
      ['merge', 'm'],
    ]);
    expect(includes).toEqual(['../x.config', '~/y.config']);
    expect(() => parseConfig('[filter "x]\n')).toThrow();
    const armed = arm('included', VECTORS['a driver in an included file outside the repository']!);
    expect(repositoryNamedSections(path.join(armed.repo, 'sub', 'dir'))).toContainEqual(['filter', 'Inc=luded.x']);
    expect(existsSync(armed.repo)).toBe(true);
  });
});
