#!/usr/bin/env node
// `npx tws …`: the operator CLI as plain JavaScript, no TypeScript loader: client/cli/cli.ts as
// compiled by scripts/build.mjs (make setup runs it) into .build/, found from this file's own
// place, so it runs from any folder.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../.build/client/cli/cli.js', import.meta.url));
if (!existsSync(cli)) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  process.stderr.write(
    `tws: not built (${cli} is missing): run \`make setup\` (or \`node scripts/build.mjs\`) in ${root}\n`,
  );
  process.exit(3);
}
await createRequire(import.meta.url)(cli).main(process.argv.slice(2));
