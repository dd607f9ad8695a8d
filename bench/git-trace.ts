/**
 * A diagnostic mode (BENCH_GIT_TRACE=1, never for the published figures: the wrapper itself
 * costs a few milliseconds per call): the worker and the gateway get a git wrapper, through
 * the product's own TWS_GIT_BINARY, that appends "start_ns end_ns cwd args" per git process.
 */
import { chmod, writeFile } from 'node:fs/promises';
import path from 'node:path';

export async function gitTraceWrapper(scratch: string): Promise<{ binary: string; traceFile: string }> {
  const binary = path.join(scratch, 'git-trace.sh');
  const traceFile = path.join(scratch, 'logs', 'git-trace.log');
  await writeFile(
    binary,
    `#!/usr/bin/env bash
start=$(date +%s%N)
git "$@"
rc=$?
echo "$start $(date +%s%N) $PWD $*" >> '${traceFile}'
exit $rc
`,
  );
  await chmod(binary, 0o755);
  return { binary, traceFile };
}
