/**
 * Finishing a task from the command line: `tws preview`, `merge`, `merges`, `undo-merge` and
 * `rebase` as the built bin runs them, against real git, Temporal and PostgreSQL; the wait for a
 * merge still running after the request's own wait, against a stand-in API.
 */
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServices } from '../client/launcher/service-build';
import { commitIn, taskWithCommits } from './support/finishing';
import { createHarness, OPERATOR_TOKEN, type Harness } from './support/harness';
import { commitOf, git } from './support/world';

let h: Harness;

const BIN = path.resolve('bin/tws.mjs');

beforeAll(async () => {
  buildServices(path.resolve('.'));
  h = await createHarness();
});
afterAll(async () => h?.close());

/** The bin as `node` runs it, against `api` (the harness's gateway unless named). */
async function tws(args: string[], api = h.baseUrl): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], {
      cwd: h.scratch,
      env: { ...process.env, TWS_API_URL: api, TWS_OPERATOR_TOKEN: OPERATOR_TOKEN },
      encoding: 'utf8',
    });
    return { code: 0, stdout, stderr };
  } catch (err: any) {
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

const short = (commit: string) => commit.slice(0, 7);

describe('tws: finishing a task', () => {
  it('preview, merge, merges and undo-merge: the base moves forward, then back', async () => {
    const w = await taskWithCommits(h, 'cli-merge', [{ 'a.txt': 'a\n' }, { 'b.txt': 'b\n' }]);
    const before = commitOf(w.repo, 'main');

    const preview = await tws(['preview', w.taskId, '--strategy', 'squash']);
    expect(preview.code, preview.stderr).toBe(0);
    expect(preview.stdout).toMatch(new RegExp(`^strategy: squash\\n.*\\n${w.repoId}\\s+clean`, 'm'));

    const merged = await tws(['merge', w.taskId, '--strategy', 'squash', '--message', 'Add a and b']);
    expect(merged.code, merged.stderr).toBe(0);
    const after = commitOf(w.repo, 'main');
    expect(after).not.toBe(before);
    expect(git(w.repo, 'rev-parse', 'main~1')).toBe(before); // one squashed commit
    expect(git(w.repo, 'log', '-1', '--format=%s', 'main')).toBe('Add a and b');
    const operationId = /^merged \(squash\), operation ([0-9a-f-]{36})$/m.exec(merged.stdout)?.[1];
    expect(operationId, merged.stdout).toBeDefined();
    expect(merged.stdout).toMatch(new RegExp(`${w.repoId}\\s+main\\s+${short(before)} → ${short(after)}`));

    const listed = await tws(['merges', w.taskId, '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({
        operationId,
        state: 'merged',
        repositories: [{ repositoryId: w.repoId, baseBranch: 'main', before, after }],
      }),
    ]);
    // Nothing new since: a second merge is refused, with what to do.
    const again = await tws(['merge', w.taskId]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^tws: refused \(nothing_to_merge: .+\)\naction: none\n$/);

    const undone = await tws(['undo-merge', operationId!]);
    expect(undone.code, undone.stderr).toBe(0);
    expect(undone.stdout).toContain(`undone (squash), operation ${operationId}`);
    expect(undone.stdout).toMatch(new RegExp(`${w.repoId}\\s+main\\s+${short(after)} → ${short(before)}`));
    expect(commitOf(w.repo, 'main')).toBe(before);
    // The list holds the refused try too (newest first), and the merge now undone.
    const merges = JSON.parse((await tws(['merges', w.taskId, '--json'])).stdout);
    expect(merges.map((m: any) => m.state)).toEqual(['refused', 'undone']);
    expect(merges[1]).toMatchObject({ operationId, undoneAt: expect.any(String) });
    const human = await tws(['merges', w.taskId]);
    expect(human.stdout).toMatch(new RegExp(`^${operationId}\\s+squash\\s+undone\\s`, 'm'));
    expect(human.stdout).toMatch(/\srefused\s.*\snothing_to_merge$/m);
  });

  it('a conflict: preview names the file, merge exits 1 with code, action and file, and nothing moves', async () => {
    const w = await taskWithCommits(h, 'cli-conflict', [{ 'README.md': 'the task says\n' }]);
    commitIn(w.repo, { 'README.md': 'main says\n' }, 'main moved');
    const before = commitOf(w.repo, 'main');

    const preview = await tws(['preview', w.taskId, '--json']);
    expect(preview.code, preview.stderr).toBe(0);
    expect(JSON.parse(preview.stdout)).toEqual({
      strategy: 'squash',
      repositories: [{ repositoryId: w.repoId, outcome: 'conflicts', conflicts: ['README.md'] }],
    });
    expect((await tws(['preview', w.taskId])).stdout).toMatch(new RegExp(`${w.repoId}\\s+conflicts\\s+README.md`));

    const refused = await tws(['merge', w.taskId, '--strategy', 'merge']);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/^tws: refused \(merge_conflict: .+\)\naction: rebase_or_resolve\n/);
    expect(refused.stderr).toContain(`conflicts in ${w.repoId}: README.md\n`);
    expect(refused.stderr).not.toContain(w.repo); // no host path

    const asJson = await tws(['merge', w.taskId, '--json']);
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.stdout).error).toMatchObject({
      code: 'merge_conflict',
      action: 'rebase_or_resolve',
      conflicts: [{ repositoryId: w.repoId, paths: ['README.md'] }],
    });
    expect(commitOf(w.repo, 'main')).toBe(before);

    // --repository is sent as repositoryIds: one the task does not have is refused.
    const other = await tws(['merge', w.taskId, '--repository', '00000000-0000-4000-a000-000000000000']);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/^tws: refused \(invalid_request: /);
  });

  it('rebase replays the task on its moved base; --json is the answer as is', async () => {
    const w = await taskWithCommits(h, 'cli-rebase', [{ 'a.txt': 'a\n' }]);
    commitIn(w.repo, { 'other.txt': 'o\n' }, 'main moved');
    const head = commitOf(w.repo, w.branch);

    const rebased = await tws(['rebase', w.taskId]);
    expect(rebased.code, rebased.stderr).toBe(0);
    const after = commitOf(w.repo, w.branch);
    expect(git(w.repo, 'rev-parse', `${w.branch}~1`)).toBe(commitOf(w.repo, 'main'));
    expect(rebased.stdout).toMatch(
      new RegExp(`^rebased:\\n.*\\n${w.repoId}\\s+${short(head)} → ${short(after)}$`, 'm'),
    );

    const again = await tws(['rebase', w.taskId, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).repositories).toEqual([expect.objectContaining({ repositoryId: w.repoId, after })]);
    expect(commitOf(w.repo, w.branch)).toBe(after);
  });

  it('a merge still running after the wait is asked for until it ends; needs_operator exits 1', async () => {
    const taskId = '11111111-1111-4111-a111-111111111111';
    const operationId = '22222222-2222-4222-a222-222222222222';
    const view = (state: string, extra: object = {}) => ({
      operationId,
      taskId,
      strategy: 'merge',
      state,
      repositories: [{ repositoryId: taskId, baseBranch: 'main', before: 'a'.repeat(40), after: 'b'.repeat(40) }],
      createdAt: '2026-01-01T00:00:00.000Z',
      finishedAt: null,
      undoneAt: null,
      links: {},
      ...extra,
    });
    let reads = 0;
    let prefer: string | undefined;
    let body: any;
    let answerAtOnce: object | null = null;
    const api = http.createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => (text += chunk));
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        if (req.method === 'POST' && req.url === `/v1/tasks/${taskId}/merge`) {
          prefer = String(req.headers.prefer);
          body = JSON.parse(text);
          if (answerAtOnce) return res.end(JSON.stringify(answerAtOnce));
          res.statusCode = 202;
          return res.end(JSON.stringify({ operationId, workflowId: 'w', links: {} }));
        }
        if (req.method === 'GET' && req.url === `/v1/merges/${operationId}`)
          return res.end(JSON.stringify(view(++reads < 3 ? 'running' : 'merged')));
        res.statusCode = 404;
        res.end(JSON.stringify({ error: { code: 'not_found', message: 'Not found.' } }));
      });
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
    try {
      const waited = await tws(
        [
          'merge',
          taskId,
          '--strategy',
          'merge',
          '--archive',
          '--stop-agents',
          '--repository',
          taskId,
          '--repository',
          operationId,
        ],
        url,
      );
      expect(waited.code, waited.stderr).toBe(0);
      expect(prefer).toBe('wait');
      expect(body).toEqual({
        strategy: 'merge',
        archive: true,
        stopAgents: true,
        repositoryIds: [taskId, operationId],
      });
      expect(reads).toBe(3);
      expect(waited.stdout).toContain(`merged (merge), operation ${operationId}`);
      expect(waited.stdout).toMatch(/main\s+aaaaaaa → bbbbbbb/);

      answerAtOnce = view('needs_operator', {
        error: { code: 'internal', message: 'A base could not be put back.', action: 'operator', errorId: operationId },
      });
      const stuck = await tws(['merge', taskId, '--json'], url);
      expect(stuck.code).toBe(1);
      expect(JSON.parse(stuck.stdout)).toMatchObject({ state: 'needs_operator' });
      expect(stuck.stderr).toMatch(
        /^tws: needs an operator \(internal: A base could not be put back\.\)\naction: operator\n$/,
      );
    } finally {
      api.closeAllConnections();
      api.close();
    }
  });
});
