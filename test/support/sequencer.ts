/**
 * The order test files start in: longest first, by the times a run recorded (test/file-times.json),
 * so that the suite's two workers finish together rather than one running a long file alone at
 * the end. Vitest's own order needs its cache, which a fresh clone (CI) does not have: it would
 * start the largest files first, and a long file that is small on disk (the fault matrix's rows)
 * last. A file not in the record starts first, as vitest starts unknown files.
 * `node scripts/file-times.mjs` refreshes the record from the last run (.build/test-times.json).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

function recordedSeconds(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(path.join(import.meta.dirname, '..', 'file-times.json'), 'utf8'));
  } catch {
    return {};
  }
}

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seconds = recordedSeconds();
    const root = path.join(import.meta.dirname, '..', '..');
    const weight = (f: TestSpecification) => seconds[path.relative(root, f.moduleId)] ?? Number.POSITIVE_INFINITY;
    return [...files].sort((a, b) => {
      const [wa, wb] = [weight(a), weight(b)];
      return wa === wb ? a.moduleId.localeCompare(b.moduleId) : wb - wa;
    });
  }
}
