/**
 * Bundles the workflow code into a file, in a short-lived process, so the long-running worker
 * loads it ready-made: webpack never runs in the worker, whose memory stays lower.
 * Usage: node .build/worker/bundle.js <output file> (after scripts/build.mjs)
 */
import { writeFile } from 'node:fs/promises';
import { bundleWorkflows } from './worker';

const out = process.argv[2];
if (!out) {
  console.error('usage: bundle.ts <output file>');
  process.exit(2);
}
bundleWorkflows()
  .then((bundle) => writeFile(out, bundle.code))
  .then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
