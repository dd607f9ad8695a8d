/**
 * The built-in profiles of real coding agents (claude, codex, gemini, aider), run by stand-in
 * executables of those names first on the agent's PATH that print what they received: each gets
 * its prompt the way the real one reads it (an argument, standard input, a file), its home is its
 * task's across sessions and a resume, and the credentials the operator gave reach it and nothing
 * else: not the session's views, its stored row, its log, the service's log, nor the host file.
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BUILTIN_AGENT_PROFILES } from '../domain/agent-builtins';
import { parseProfiles } from '../domain/agent-profiles';
import { loadConfig } from '../domain/config';
import { deleteTask, waitForJob } from './support/cleanup';
import { harnessesPerTest, OPERATOR_TOKEN, type Harness } from './support/harness';
import { startSshServer, targetFields } from './support/ssh-server';
import { closeSshConnections } from '../ssh/connection';
import { agentEnded, createTask, expectSafeError, launch, registerRepo, waitUntil } from './support/scenario';
import { makeRepo } from './support/world';

const { harness, scratch, cleanups } = harnessesPerTest();

const TOKEN = 'sk-standin-config-7f3a91';
const PASSED = 'passed-standin-env-5be2c0';
const FILE_SECRET = 'file-standin-secret-d41c77';
const PROMPT = 'Fix the "bug" in $HOME; `echo pwned` & say \'done\'\nsecond line';
const sha = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * The stand-in: its argv one per line, its stdin, a file named after --message-file, its HOME and
 * how often it ran there, the credentials as hashes (never their values), and what it could do to
 * the credential file and its host source.
 */
const STAND_IN = `#!/bin/sh
printf 'name: %s\\n' "$(basename "$0")"
for a in "$@"; do printf 'arg: %s\\n' "$(printf '%s' "$a" | head -c 200 | tr '\\n' '|')"; done
printf 'stdin: %s\\n' "$(cat | tr '\\n' '|')"
prev=''; for a in "$@"; do [ "$prev" = --message-file ] && printf 'message-file: %s\\n' "$(tr '\\n' '|' < "$a")"; prev=$a; done
printf 'home: %s\\n' "$HOME"
n=$(cat "$HOME/.standin-runs" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$HOME/.standin-runs"; echo "runs: $n"
h() { if [ -n "$1" ]; then printf '%s' "$1" | sha256sum | cut -d' ' -f1; else echo absent; fi; }
echo "token: $(h "$STANDIN_TOKEN")"
echo "passed: $(h "$STANDIN_PASSED")"
f="$HOME/.standin/credentials.json"
if [ -r "$f" ]; then echo "file: $(h "$(cat "$f")")"; else echo 'file: absent'; fi
if (echo overwritten > "$f") 2>/dev/null; then echo 'file-write: wrote'; else echo 'file-write: refused'; fi
if rm -f "$f" 2>/dev/null && [ ! -e "$f" ]; then echo 'file-remove: removed'; else echo 'file-remove: refused'; fi
if cat "$CRED_SOURCE" >/dev/null 2>&1; then echo 'source-read: read'; else echo 'source-read: refused'; fi
if (echo overwritten > "$CRED_SOURCE") 2>/dev/null; then echo 'source-write: wrote'; else echo 'source-write: refused'; fi
echo "service: \${DATABASE_URL:-none} \${TWS_OPERATOR_TOKEN:-none} \${TWS_USER_TOKEN:-none}"
echo 'verdict: end'
`;

/**
 * A folder of stand-ins named claude, codex, gemini and aider, searchable by every agent's uid, and
 * outside /tmp (the sandbox's /tmp is its own).
 */
function standIns(): string {
  const bin = mkdtempSync('/var/tmp/tws-standin-');
  cleanups.push(() => rmSync(bin, { recursive: true, force: true }));
  chmodSync(bin, 0o755);
  for (const name of Object.keys(BUILTIN_AGENT_PROFILES))
    writeFileSync(path.join(bin, name), STAND_IN, { mode: 0o755 });
  return bin;
}

/** The stand-in's verdict (its log once it printed its last line). */
async function verdictOf(
  h: Harness,
  sessionId: string,
  executionId: string,
  /** A remote agent's end is seen at the next check of its target: its last line is enough. */
  waitForEnd = true,
): Promise<Record<string, string[]>> {
  if (waitForEnd) await agentEnded(h, sessionId);
  const { log_path: logPath } = (await h.pool.query('SELECT log_path FROM executions WHERE id = $1', [executionId]))
    .rows[0];
  await waitUntil(async () => readFileSync(logPath, 'utf8').includes('verdict: end'), 'the stand-in verdict');
  const lines: Record<string, string[]> = {};
  for (const line of readFileSync(logPath, 'utf8').split('\n').filter(Boolean)) {
    const at = line.indexOf(': ');
    (lines[line.slice(0, at)] ??= []).push(line.slice(at + 2));
  }
  return lines;
}

describe('real coding agents', () => {
  it('each built-in profile gets its prompt as its agent reads it, one home per task, and the credentials alone [issue 67]', async () => {
    const bin = standIns();
    const secrets = await scratch();
    const source = path.join(secrets, 'claude-credentials.json');
    writeFileSync(source, JSON.stringify({ token: FILE_SECRET }), { mode: 0o600 });
    process.env.STANDIN_PASSED = PASSED;
    const serviceLog: string[] = [];
    const logTo = new Writable({
      write: (chunk: Buffer, _encoding, done) => void (serviceLog.push(chunk.toString('utf8')), done()),
    });
    const base = loadConfig({}, { cwd: secrets, hostname: 'test' });
    // The operator's entry of the built-in's name keeps its command and prompt, and adds credentials.
    const operator = JSON.stringify({
      claude: {
        credentials: {
          env: { STANDIN_TOKEN: TOKEN },
          passEnv: ['STANDIN_PASSED'],
          files: [{ path: '.standin/credentials.json', from: source }],
        },
      },
    });
    const h = await harness(
      { agentProfiles: parseProfiles(operator, base.limits.maximum, BUILTIN_AGENT_PROFILES) },
      { logTo },
    );
    const repo = makeRepo(h.scratch, 'real-agents');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'real-agents')]);
    const env = { PATH: `${bin}:/usr/bin:/bin`, CRED_SOURCE: source };
    const run = (agentProfile: string) => launch(h, taskId, { agentProfile, command: undefined, prompt: PROMPT, env });

    // A profile that reads a prompt refuses a launch without one; a profile with credentials the
    // executors that cannot take them: 400, nothing created, nothing of the credentials said.
    for (const body of [
      { agentProfile: 'claude', command: undefined, env },
      { agentProfile: 'gemini', command: undefined, prompt: '' },
      { agentProfile: 'claude', command: undefined, prompt: 'x', executorType: 'container' },
      { agentProfile: 'codex', command: undefined, prompt: 'x'.repeat(200 * 1024) },
    ]) {
      const refused = await launch(h, taskId, body);
      expect(refused.status, JSON.stringify(body).slice(0, 200)).toBe(400);
      expectSafeError(refused.body, 'invalid_request', [source, TOKEN, PASSED, FILE_SECRET]);
    }
    expect((await h.pool.query('SELECT count(*)::int AS n FROM sessions')).rows[0].n).toBe(0);

    const verdicts: Record<string, Record<string, string[]>> = {};
    const sessions: Record<string, { sessionId: string; executionId: string }> = {};
    for (const name of ['claude', 'codex', 'gemini', 'aider']) {
      const res = await run(name);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      sessions[name] = res.body;
      verdicts[name] = await verdictOf(h, res.body.sessionId, res.body.executionId);
    }
    const flat = PROMPT.replace(/\n/g, '|');
    expect(verdicts.claude!.arg).toEqual(['--dangerously-skip-permissions', '-p', flat]);
    expect(verdicts.claude!.stdin).toEqual(['']);
    expect(verdicts.codex!.arg).toEqual(['exec', '--sandbox', 'workspace-write', '--skip-git-repo-check', flat]);
    expect(verdicts.gemini!.arg).toEqual(['--yolo']);
    expect(verdicts.gemini!.stdin).toEqual([flat]);
    expect(verdicts.aider!.arg!.slice(0, 2)).toEqual(['--yes-always', '--message-file']);
    expect(verdicts.aider!['message-file']).toEqual([flat]);

    // One home for the task's agents (one uid: one workspace), kept from session to session.
    const homes = Object.values(verdicts).map((v) => v.home![0]);
    expect(new Set(homes).size).toBe(1);
    expect(homes[0]).toBe(path.join(h.config.logDir, taskId, 'homes', readdirSync(path.dirname(homes[0]!))[0]!));
    expect(['claude', 'codex', 'gemini', 'aider'].map((n) => verdicts[n]!.runs![0])).toEqual(['1', '2', '3', '4']);
    // A resume takes a prompt too, and finds the home as it was.
    const resumed = await h.api('POST', `/v1/sessions/${sessions.claude!.sessionId}/resume`, { prompt: 'again' });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const again = await verdictOf(h, sessions.claude!.sessionId, resumed.body.execution.id);
    expect(again.runs).toEqual(['5']);
    expect(again.arg).toEqual(['--dangerously-skip-permissions', '-p', 'again']);
    const promptless = await h.api('POST', `/v1/sessions/${sessions.claude!.sessionId}/resume`, {});
    expect(promptless.status).toBe(400);

    // The credentials reach claude's agent alone, read-only; the host file stays out of its reach.
    expect(verdicts.claude!.token).toEqual([sha(TOKEN)]);
    expect(verdicts.claude!.passed).toEqual([sha(PASSED)]);
    expect(verdicts.claude!.file).toEqual([sha(JSON.stringify({ token: FILE_SECRET }))]);
    expect(verdicts.claude!['file-write']).toEqual(['refused']);
    expect(verdicts.claude!['file-remove']).toEqual(['refused']);
    expect(verdicts.claude!['source-read']).toEqual(['refused']);
    expect(verdicts.claude!['source-write']).toEqual(['refused']);
    expect(readFileSync(source, 'utf8')).toBe(JSON.stringify({ token: FILE_SECRET }));
    for (const name of ['codex', 'gemini', 'aider']) {
      expect([verdicts[name]!.token, verdicts[name]!.passed, verdicts[name]!.file]).toEqual([
        ['absent'],
        ['absent'],
        ['absent'],
      ]);
    }
    for (const v of Object.values(verdicts)) expect(v.service).toEqual(['none none none']);

    // Nothing of them in the session's views, its stored row, any agent log, or the service's log.
    const seen = [
      JSON.stringify((await h.api('GET', `/v1/tasks/${taskId}/sessions`)).body),
      JSON.stringify((await h.api('GET', `/v1/sessions/${sessions.claude!.sessionId}`)).body),
      String((await h.api('GET', `/v1/sessions/${sessions.claude!.sessionId}/logs`)).body),
      JSON.stringify((await h.pool.query('SELECT * FROM sessions')).rows),
      JSON.stringify((await h.pool.query('SELECT * FROM executions')).rows),
      serviceLog.join(''),
    ].join('\n');
    expect(seen).toContain(sessions.claude!.sessionId);
    for (const secret of [TOKEN, PASSED, FILE_SECRET]) expect(seen).not.toContain(secret);

    // The task's homes go with it when it is deleted.
    const homesFolder = path.join(h.config.logDir, taskId, 'homes');
    expect(existsSync(homesFolder)).toBe(true);
    const deleted = await deleteTask(h, taskId);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
    await waitForJob(h, deleted.body.operationId);
    expect(existsSync(homesFolder)).toBe(false);
    delete process.env.STANDIN_PASSED;
  });

  it('an SSH target gets each prompt as its agent reads it, and never a profile with credentials [issue 67]', async () => {
    const bin = standIns();
    const ssh = await startSshServer();
    cleanups.push(() => ssh.remove(), closeSshConnections);
    const base = loadConfig({}, { cwd: bin, hostname: 'test' });
    const operator = JSON.stringify({ claude: { credentials: { env: { STANDIN_TOKEN: TOKEN } } } });
    const h = await harness({ agentProfiles: parseProfiles(operator, base.limits.maximum, BUILTIN_AGENT_PROFILES) });
    const target = await h.api('POST', '/v1/ssh-targets', { name: 'box', ...targetFields(ssh) }, OPERATOR_TOKEN);
    expect(target.status, JSON.stringify(target.body)).toBe(201);
    const repo = makeRepo(h.scratch, 'remote-agents');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'remote-agents')]);
    // The target account's own home is left alone: the stand-in counts its runs in a folder of the test's.
    const home = await scratch();
    const env = { PATH: `${bin}:/usr/bin:/bin`, HOME: home, CRED_SOURCE: path.join(home, 'no-credentials') };
    const remote = (agentProfile: string) =>
      launch(h, taskId, {
        executorType: 'ssh',
        sshTargetId: target.body.id,
        agentProfile,
        command: undefined,
        prompt: PROMPT,
        env,
      });
    const refused = await remote('claude');
    expect(refused.status).toBe(400);
    expectSafeError(refused.body, 'invalid_request', [TOKEN]);
    const flat = PROMPT.replace(/\n/g, '|');
    const expected: Record<string, [string, string]> = {
      codex: ['arg', flat],
      gemini: ['stdin', flat],
      aider: ['message-file', flat],
    };
    for (const [name, [field, value]] of Object.entries(expected)) {
      const res = await remote(name);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const verdict = await verdictOf(h, res.body.sessionId, res.body.executionId, false);
      expect(verdict.name).toEqual([name]);
      expect(verdict[field]!.at(-1)).toBe(value);
      expect(verdict.token).toEqual(['absent']);
    }
  });

  it('TWS_BUILTIN_PROFILES turns built-ins off; an operator profile takes a prompt mode, checked at start-up', () => {
    const load = (env: Record<string, string>) => loadConfig(env, { cwd: '/tmp', hostname: 'test' });
    expect(Object.keys(load({}).agentProfiles).sort()).toEqual(['aider', 'claude', 'codex', 'gemini']);
    expect(Object.keys(load({ TWS_BUILTIN_PROFILES: 'claude,aider' }).agentProfiles)).toEqual(['claude', 'aider']);
    expect(load({ TWS_BUILTIN_PROFILES: 'none' }).agentProfiles).toEqual({});
    expect(() => load({ TWS_BUILTIN_PROFILES: 'cursor' })).toThrow(/TWS_BUILTIN_PROFILES/);
    const own = load({
      TWS_AGENT_PROFILES: JSON.stringify({
        mine: { command: ['my-agent'], prompt: 'file', promptArguments: ['--task={promptFile}'] },
      }),
    });
    expect(own.agentProfiles.mine!.prompt).toEqual({ mode: 'file', arguments: ['--task={promptFile}'] });
    for (const bad of [
      { mine: { command: ['a'], prompt: 'argument', promptArguments: ['--no-placeholder'] } },
      { mine: { command: ['a'], prompt: 'tty' } },
      { mine: { command: ['a'], credentials: { passEnv: ['DATABASE_URL'] } } },
      { mine: { command: ['a'], credentials: { env: { TWS_OPERATOR_TOKEN: 'x' } } } },
      { mine: { command: ['a'], credentials: { files: [{ path: '../escape', from: '/etc/hostname' }] } } },
      { mine: { command: ['a'], credentials: { files: [{ path: '.gitconfig', from: '/etc/hostname' }] } } },
    ])
      expect(() => load({ TWS_AGENT_PROFILES: JSON.stringify(bad) }), JSON.stringify(bad)).toThrow(
        /TWS_AGENT_PROFILES/,
      );
  });
});
