/**
 * Re-judges and re-renders a results file without measuring again (after a change to the
 * targets or the report): `node --import tsx bench/report/rerender.ts [dir]`. The figures are
 * the file's own; only the verdicts and the Markdown and SVG are written anew.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { evaluateTargets } from '../evaluate';
import type { BenchResults } from '../model';
import { writeResults } from './write';

async function main(): Promise<void> {
  const dir = process.argv[2] ?? path.join(__dirname, '..', 'results');
  const results = JSON.parse(await readFile(path.join(dir, 'latest.json'), 'utf8')) as BenchResults;
  const { targets: _old, ...figures } = results;
  await writeResults(dir, { ...figures, targets: evaluateTargets(figures) });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
