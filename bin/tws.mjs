#!/usr/bin/env node
// `npx tws …`: the operator CLI (client/cli.ts), run through this package's own tsx, from any folder.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../client/cli.ts', import.meta.url));
const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), cli, ...process.argv.slice(2)], {
  stdio: 'inherit',
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + 2 : 3)));
