import { describe, expect, it } from 'vitest';
import {
  diskIsLow,
  duBytes,
  isNoSpaceFailure,
  minFreeBytes,
  parseDiskQuota,
  parseMinFreeDisk,
  surelyWithinQuota,
} from '../../domain/disk';
import { guardMargin, hostDiskRunningOut, parseGuardEvery, parseGuardMargin } from '../../domain/disk-guard';

const GiB = 1024 ** 3;

describe('TWS_MIN_FREE_DISK [R6.11]', () => {
  it('reads bytes, units and percentages; unset is the default', () => {
    expect(parseMinFreeDisk(undefined)).toEqual({ kind: 'default' });
    expect(parseMinFreeDisk('')).toEqual({ kind: 'default' });
    expect(parseMinFreeDisk('0')).toEqual({ kind: 'bytes', bytes: 0 });
    expect(parseMinFreeDisk('2147483648')).toEqual({ kind: 'bytes', bytes: 2 * GiB });
    expect(parseMinFreeDisk('2GiB')).toEqual({ kind: 'bytes', bytes: 2 * GiB });
    expect(parseMinFreeDisk('1.5 gib')).toEqual({ kind: 'bytes', bytes: 1.5 * GiB });
    expect(parseMinFreeDisk('500MB')).toEqual({ kind: 'bytes', bytes: 500_000_000 });
    expect(parseMinFreeDisk('5%')).toEqual({ kind: 'percent', percent: 5 });
    for (const bad of ['-1', 'lots', '5 parsecs', '101%', '1e9', 'GiB'])
      expect(() => parseMinFreeDisk(bad), bad).toThrow(/TWS_MIN_FREE_DISK/);
  });
  it('the default is the larger of 2 GiB and 5 % of the filesystem', () => {
    expect(minFreeBytes({ kind: 'default' }, 10 * GiB)).toBe(2 * GiB);
    expect(minFreeBytes({ kind: 'default' }, 100 * GiB)).toBe(5 * GiB);
    expect(minFreeBytes({ kind: 'percent', percent: 10 }, 100 * GiB)).toBe(10 * GiB);
    expect(minFreeBytes({ kind: 'bytes', bytes: 7 }, 100 * GiB)).toBe(7);
  });
  it('low is strictly under the minimum', () => {
    const setting = { kind: 'bytes', bytes: 100 } as const;
    expect(diskIsLow({ freeBytes: 99, totalBytes: 1000 }, setting)).toBe(true);
    expect(diskIsLow({ freeBytes: 100, totalBytes: 1000 }, setting)).toBe(false);
    expect(diskIsLow({ freeBytes: 0, totalBytes: 1000 }, { kind: 'bytes', bytes: 0 })).toBe(false);
  });
});

describe('a write that ran out of space', () => {
  it('is told by errno or by what git printed, anywhere in the cause chain', () => {
    expect(isNoSpaceFailure(Object.assign(new Error('write failed'), { code: 'ENOSPC' }))).toBe(true);
    expect(isNoSpaceFailure(new Error('error: unable to write file big.bin\nfatal: Could not reset index'))).toBe(true);
    expect(isNoSpaceFailure(new Error('fatal: write error: No space left on device'))).toBe(true);
    expect(isNoSpaceFailure(new Error('outer', { cause: new Error('Disk quota exceeded') }))).toBe(true);
    expect(isNoSpaceFailure(new Error("fatal: a branch named 'x' already exists"))).toBe(false);
    expect(isNoSpaceFailure(new Error('error: unable to create file x: Permission denied'))).toBe(false);
    expect(isNoSpaceFailure('ENOSPC')).toBe(false);
  });
  it('du -sk totals are read as bytes', () => {
    expect(duBytes('12\t/w/t\n')).toBe(12 * 1024);
    expect(duBytes('')).toBeNull();
    expect(duBytes('du: cannot read')).toBeNull();
  });
});

describe('the free-space guard [R6.11]', () => {
  const MiB = 1024 ** 2;
  const setting = { kind: 'bytes', bytes: 512 * MiB } as const;

  it('keeps the larger of its floor and four falls between two checks above the minimum', () => {
    expect(guardMargin(64 * MiB, [])).toBe(64 * MiB);
    const readings = [
      { at: 0, freeBytes: 2048 * MiB },
      { at: 250, freeBytes: 1848 * MiB },
      { at: 500, freeBytes: 1798 * MiB },
    ];
    expect(guardMargin(64 * MiB, readings)).toBe(800 * MiB);
    expect(guardMargin(GiB, readings)).toBe(GiB);
  });

  it('stops agents under the minimum plus the margin, and when the free space cannot be read', () => {
    const space = (freeMiB: number) => ({ freeBytes: freeMiB * MiB, totalBytes: 2 * GiB });
    expect(hostDiskRunningOut(space(700), setting, 128 * MiB)).toBe(false);
    expect(hostDiskRunningOut(space(600), setting, 128 * MiB)).toBe(true);
    expect(hostDiskRunningOut(null, setting, 0)).toBe(true);
  });

  it('reads its settings: 250 ms and 1 GiB unset', () => {
    expect(parseGuardEvery(undefined)).toBe(250);
    expect(parseGuardEvery('100')).toBe(100);
    expect(() => parseGuardEvery('5')).toThrow(/TWS_DISK_GUARD_EVERY_MS/);
    expect(parseGuardMargin(undefined)).toBe(GiB);
    expect(parseGuardMargin('256MiB')).toBe(256 * MiB);
    expect(() => parseGuardMargin('lots')).toThrow(/TWS_DISK_GUARD_MARGIN/);
  });
});

describe('TWS_TASK_DISK_QUOTA [R6.11]', () => {
  it('bounds a task by default; 0 is no quota; a task is surely within it while its filesystem fell by less than its room', () => {
    expect(parseDiskQuota(undefined)).toBe(20 * GiB);
    expect(parseDiskQuota('')).toBe(20 * GiB);
    expect(parseDiskQuota('0')).toBeNull();
    expect(parseDiskQuota('8GiB')).toBe(8 * GiB);
    const last = { bytes: 6 * GiB, freeBefore: 100 * GiB };
    expect(surelyWithinQuota(last, 98 * GiB, 8 * GiB)).toBe(true);
    expect(surelyWithinQuota(last, 97 * GiB, 8 * GiB)).toBe(false);
    // Space freed elsewhere never counts as room.
    expect(surelyWithinQuota(last, 120 * GiB, 8 * GiB)).toBe(true);
    expect(surelyWithinQuota({ bytes: 9 * GiB, freeBefore: 100 * GiB }, 120 * GiB, 8 * GiB)).toBe(false);
  });
});
