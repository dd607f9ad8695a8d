import { describe, expect, it } from 'vitest';
import { DEFAULT_RESTART_BACKOFF, nextRestartWait } from '../../domain/restart-backoff';

/** The waits a part that dies `deaths` times in a row, each run lasting `ranForMs`, sees. */
function waits(deaths: number, ranForMs: number): number[] {
  const seen: number[] = [];
  let previous: number | null = null;
  for (let i = 0; i < deaths; i++) {
    previous = nextRestartWait(DEFAULT_RESTART_BACKOFF, previous, ranForMs);
    seen.push(previous);
  }
  return seen;
}

describe('restart backoff of the launcher', () => {
  it('waits half a second after a first death, then doubles while the part keeps dying', () => {
    expect(waits(6, 100)).toEqual([500, 1000, 2000, 4000, 8000, 16_000]);
  });
  it('never waits more than 30 s, however often the part dies', () => {
    expect(waits(12, 0).slice(-4)).toEqual([30_000, 30_000, 30_000, 30_000]);
  });
  it('starts again from half a second once the part stayed up for a minute', () => {
    expect(nextRestartWait(DEFAULT_RESTART_BACKOFF, 30_000, 60_000)).toBe(500);
    expect(nextRestartWait(DEFAULT_RESTART_BACKOFF, 30_000, 59_999)).toBe(30_000);
    expect(nextRestartWait(DEFAULT_RESTART_BACKOFF, 4000, 59_999)).toBe(8000);
  });
});
