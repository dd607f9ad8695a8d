// Writes test/file-times.json (each test file's seconds, as the last run recorded them in
// .build/test-times.json): the order test/support/sequencer.ts starts files in.
import { readFileSync, writeFileSync } from 'node:fs';

const run = JSON.parse(readFileSync('.build/test-times.json', 'utf8'));
const times = Object.fromEntries(
  run.files.map((f) => [f.file, Math.round(f.seconds * 10) / 10]).sort((a, b) => b[1] - a[1]),
);
writeFileSync('test/file-times.json', `${JSON.stringify(times, null, 2)}\n`);
console.log(`test/file-times.json: ${run.files.length} files`);
