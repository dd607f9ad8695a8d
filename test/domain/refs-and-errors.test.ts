import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_TABLE } from '../../domain/errors';
import { errorBody } from '../../domain/error-body';
import { mergeInventoryRow } from '../../domain/inventory';
import { branchNameProblem, repositoryNameProblem } from '../../domain/refs';

describe('branch names', () => {
  it('accepts what git accepts', () => {
    for (const ok of ['main', 'feature/x', 'tws/0f0e-1', 'release-1.2', 'a_b'])
      expect(branchNameProblem(ok)).toBeNull();
  });
  it('refuses what git refuses, and a leading "-"', () => {
    for (const bad of [
      '',
      '-x',
      'a..b',
      'a b',
      'a~b',
      'a^b',
      'a:b',
      'a?b',
      'a*b',
      'a[b',
      'a\\b',
      'x.lock',
      'a/.b',
      'a/',
      '/a',
      'a//b',
      'a.',
      'a@{b',
      '@',
      'HEAD',
      'a\u0001b',
    ]) {
      expect(branchNameProblem(bad), bad).not.toBeNull();
    }
  });
  it('keeps repository names to one safe folder name', () => {
    expect(repositoryNameProblem('repo-1.x')).toBeNull();
    for (const bad of ['../x', 'a/b', '.hidden', '-x', '', 'x.lock'])
      expect(repositoryNameProblem(bad), bad).not.toBeNull();
  });
});

describe('error table [R7]', () => {
  /**
   * Every code of the contract, as the contract lists it: [status, recoverable, retryAfterMs,
   * action]. Compared whole, so a row that drifts, or a code added without its row here, fails.
   */
  const CONTRACT: Record<string, [number, boolean, number, string]> = {
    workspace_preparing: [409, true, 1000, 'retry'],
    workspace_reuse_unsafe: [409, true, 0, 'reset_environment'],
    workspace_reuse_unsupported: [409, false, 0, 'choose_executor'],
    checkout_branch_unsupported: [400, false, 0, 'fix_request'],
    workspace_materialization_failed: [409, true, 0, 'retry'],
    host_disk_low: [507, true, 0, 'free_space'],
    task_disk_quota: [507, true, 0, 'free_space'],
    task_cleanup_in_progress: [409, true, 5000, 'retry'],
    task_archived: [409, false, 0, 'unarchive'],
    task_delete_dirty_worktree: [409, true, 0, 'discard_or_commit'],
    session_running: [409, true, 0, 'stop_session'],
    task_not_idle: [409, false, 0, 'wait'],
    cleanup_job_not_retryable: [409, false, 0, 'none'],
    cleanup_job_finished: [409, false, 0, 'none'],
    launch_cancelled: [409, false, 0, 'none'],
    ssh_host_key_mismatch: [409, false, 0, 'operator'],
    ssh_target_name_taken: [409, false, 0, 'none'],
    ssh_target_in_use: [409, false, 0, 'operator'],
    repository_taken: [409, false, 0, 'fix_request'],
    workspace_root_unusable: [503, false, 0, 'operator'],
    container_image_missing: [409, false, 0, 'operator'],
    workspace_setup_failed: [409, true, 0, 'retry'],
    invalid_request: [400, false, 0, 'fix_request'],
    limits_exceeded: [400, false, 0, 'fix_request'],
    not_found: [404, false, 0, 'fix_request'],
    method_not_allowed: [405, false, 0, 'fix_request'],
    unauthorized: [401, false, 0, 'authenticate'],
    forbidden: [403, false, 0, 'authenticate'],
    payload_too_large: [413, false, 0, 'fix_request'],
    unsupported_media_type: [415, false, 0, 'fix_request'],
    uri_too_long: [414, false, 0, 'fix_request'],
    headers_too_large: [431, false, 0, 'fix_request'],
    service_unavailable: [503, true, 2000, 'retry'],
    engine_unavailable: [503, true, 2000, 'retry'],
    host_unavailable: [503, true, 5000, 'retry'],
    ssh_target_unavailable: [503, true, 5000, 'retry'],
    executor_unavailable: [503, true, 2000, 'retry'],
    merge_conflict: [409, true, 0, 'rebase_or_resolve'],
    task_uncommitted_changes: [409, true, 0, 'commit_or_consent'],
    base_checkout_dirty: [409, true, 0, 'operator'],
    nothing_to_merge: [409, false, 0, 'none'],
    merge_in_progress: [409, true, 1000, 'retry'],
    base_moved_since_merge: [409, false, 0, 'revert'],
    merge_strategy_not_allowed: [400, false, 0, 'fix_request'],
    not_fast_forward: [409, true, 0, 'rebase_or_resolve'],
    push_failed: [502, true, 2000, 'retry'],
    internal: [500, true, 1000, 'report'],
  };
  const rows = Object.fromEntries(
    Object.entries(ERROR_TABLE).map(([code, r]) => [code, [r.status, r.recoverable, r.retryAfterMs, r.action]]),
  );

  it('matches the contract row by row, every code', () => {
    expect(Object.keys(CONTRACT)).toHaveLength(47);
    expect(rows).toEqual(CONTRACT);
  });

  it("the docs' table of every code says what the table says", () => {
    const doc = readFileSync(path.join(__dirname, '../../docs/api.md'), 'utf8');
    // `| \`code\` | 409 | yes, \`retry\` (1 s) | …`: a row naming one code alone (a variant's row names more).
    const documented = new Map<string, [number, boolean, number, string]>();
    for (const m of doc.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \| (yes|no), `([a-z_]+)`(?: \((\d+) s\))? \|/gm))
      documented.set(m[1]!, [Number(m[2]), m[3] === 'yes', Number(m[5] ?? 0) * 1000, m[4]!]);
    expect(Object.fromEntries(documented)).toEqual(CONTRACT);
  });

  it('builds the contract body, extras never overriding the contract fields', () => {
    expect(errorBody('task_archived', 'id-1', undefined, { code: 'spoofed', dirtyRepositories: ['r'] })).toEqual({
      error: {
        code: 'task_archived',
        message: ERROR_TABLE.task_archived.message,
        recoverable: false,
        retryAfterMs: 0,
        action: 'unarchive',
        errorId: 'id-1',
        dirtyRepositories: ['r'],
      },
    });
  });
});

describe('inventory merge rule [R4]', () => {
  const identity = { worktreeId: 'wt1', worktreePath: '/w/t/r', worktreeBranch: 'tws/t' };
  it('an inventory-only row never clears an existing worktree identity [R4.1]', () => {
    const merged = mergeInventoryRow(
      { identity, headCommit: 'abc', position: 0, error: null },
      { identity: null, headCommit: null, position: 2, error: 'stale' },
    );
    expect(merged).toEqual({ identity, headCommit: 'abc', position: 2, error: 'stale' });
  });
  it('a row with a worktree id replaces id, path and branch together [R4.2]', () => {
    const next = { worktreeId: 'wt2', worktreePath: '/w/t2/r', worktreeBranch: 'other' };
    expect(
      mergeInventoryRow(
        { identity, headCommit: 'abc', position: 0, error: null },
        { identity: next, headCommit: 'def', position: 0, error: null },
      ).identity,
    ).toEqual(next);
  });
  it('a first row is taken as it comes', () => {
    expect(mergeInventoryRow(null, { identity: null, headCommit: null, position: 1, error: null })).toEqual({
      identity: null,
      headCommit: null,
      position: 1,
      error: null,
    });
  });
});
