/**
 * Prints the plain closing line CI reads ("N passed, N failed"), after vitest's own report, and
 * before it the slowest files (a file's own time, its hooks included, and its longest test), so
 * that every run, CI's too, says where the suite's time goes. The whole list, per file and per
 * test, is written to `.build/test-times.json`. A failed test is named again in the closing lines,
 * with the first line of its error, because CI keeps only the end of the output.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

const SHOWN = 10;

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const files: { file: string; seconds: number; tests: { name: string; seconds: number }[] }[] = [];
    const failures: string[] = [];
    for (const module of testModules) {
      const file = path.relative(process.cwd(), module.moduleId);
      const before = failures.length;
      const tests: { name: string; seconds: number }[] = [];
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failures.push(`${file} > ${test.fullName}: ${firstLine(test.result().errors)}`);
        else skipped++;
        tests.push({ name: test.fullName, seconds: (test.diagnostic()?.duration ?? 0) / 1000 });
      }
      // A hook that failed (a beforeAll) fails its file or suite while its tests read skipped: it
      // counts as a failure of its own, or the closing line would say 0 failed of a red run.
      if (module.errors().length > 0) failures.push(`${file}: ${firstLine(module.errors())}`);
      for (const suite of module.children.allSuites())
        if (suite.errors().length > 0) failures.push(`${file} > ${suite.fullName}: ${firstLine(suite.errors())}`);
      if (module.state() === 'failed' && failures.length === before) failures.push(`${file}: ${firstLine(undefined)}`);
      failed += failures.length - before;
      const d = module.diagnostic();
      files.push({
        file,
        seconds: (d.duration + d.collectDuration + d.setupDuration + d.prepareDuration) / 1000,
        tests: tests.sort((a, b) => b.seconds - a.seconds),
      });
    }
    files.sort((a, b) => b.seconds - a.seconds);
    const total = files.reduce((s, f) => s + f.seconds, 0);
    try {
      mkdirSync('.build', { recursive: true });
      writeFileSync('.build/test-times.json', JSON.stringify({ totalSeconds: total, files }, null, 1));
    } catch {
      // The times are an aid; a run never fails for them.
    }
    console.log(`\nSlowest files (${files.length} files, ${total.toFixed(0)} s of file time in all):`);
    for (const f of files.slice(0, SHOWN)) {
      const longest = f.tests[0];
      console.log(
        `  ${f.seconds.toFixed(1).padStart(6)} s  ${f.file}${longest ? `  (longest test ${longest.seconds.toFixed(1)} s)` : ''}`,
      );
    }
    if (failures.length > 0) {
      console.log('\nFailed:');
      for (const f of failures) console.log(`  ${f}`);
    }
    console.log(`\nTests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
  }
}

/** The first line of a test's first error, short enough for CI's tail. */
function firstLine(errors: ReadonlyArray<{ message?: string }> | undefined): string {
  const message = errors?.[0]?.message ?? '(no error recorded)';
  return (message.split('\n')[0] ?? '').slice(0, 300);
}
