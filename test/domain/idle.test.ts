/** Idle release as a rule [R6.9]: which environment is released, which is kept and why; the settings. */
import { describe, expect, it } from 'vitest';
import {
  decideIdle,
  parseDuration,
  parseIdleReleaseAfter,
  parseIdleReleaseEvery,
  type IdleFacts,
} from '../../domain/idle';
import { saveOfRemoval, savesForRestore } from '../../domain/saved-work';

const facts = (over: Partial<IdleFacts> = {}): IdleFacts => ({
  ownerTaskId: 't',
  environmentId: 'e',
  pinned: false,
  busy: false,
  busyElsewhere: false,
  lastActivityAt: '2026-01-01T00:00:00.000Z',
  ...over,
});
const CUTOFF = '2026-01-08T00:00:00.000Z';

describe('decideIdle [R6.9]', () => {
  it('releases an environment idle since before the cutoff, and nothing else', () => {
    expect(decideIdle(facts(), CUTOFF)).toEqual({ release: true });
    expect(decideIdle(facts({ lastActivityAt: CUTOFF }), CUTOFF)).toEqual({
      release: false,
      reason: 'recently_active',
    });
  });
  it('keeps what runs, what a sharing task runs on, and what is pinned', () => {
    expect(decideIdle(facts({ busy: true }), CUTOFF)).toEqual({ release: false, reason: 'running' });
    expect(decideIdle(facts({ busy: true, busyElsewhere: true }), CUTOFF)).toEqual({
      release: false,
      reason: 'shared_task_running',
    });
    expect(decideIdle(facts({ pinned: true }), CUTOFF)).toEqual({ release: false, reason: 'pinned' });
  });
});

describe('idle settings', () => {
  it('reads durations with units, and refuses anything else', () => {
    expect(parseDuration('90s', 'X')).toBe(90_000);
    expect(parseDuration('15m', 'X')).toBe(900_000);
    expect(parseDuration('7d', 'X')).toBe(604_800_000);
    expect(parseDuration('250', 'X')).toBe(250);
    expect(() => parseDuration('a week', 'X')).toThrow(/X must be a duration/);
  });
  it('TWS_IDLE_RELEASE_AFTER defaults to 7 days; 0 and off turn release off', () => {
    expect(parseIdleReleaseAfter(undefined)).toBe(604_800_000);
    expect(parseIdleReleaseAfter('0')).toBeNull();
    expect(parseIdleReleaseAfter('off')).toBeNull();
    expect(parseIdleReleaseAfter('2h')).toBe(7_200_000);
  });
  it('TWS_IDLE_RELEASE_EVERY defaults to an hour and is at least a second', () => {
    expect(parseIdleReleaseEvery(undefined)).toBe(3_600_000);
    expect(() => parseIdleReleaseEvery('10ms')).toThrow(/at least 1s/);
  });
});

describe('where a removal saves work', () => {
  it('a release saves on a ref of its own per commit (restored later); a delete on the task ref', () => {
    expect(savesForRestore('idle_release')).toBe(true);
    expect(savesForRestore('delete')).toBe(false);
    expect(saveOfRemoval('idle_release', 't1', 'r1').refFor('abc')).toBe('refs/task-workspaces/released/t1/r1/abc');
    expect(saveOfRemoval('delete', 't1', 'r1').refFor('abc')).toBe('refs/task-workspaces/saved/t1/r1');
  });
});
