/**
 * A remote workspace's bytes on its SSH target [R6.11], measured as on a host (`du -sk -x`, links
 * not followed): only `du` runs there, nothing the agent wrote.
 */
import { duBytes } from '../domain/disk';
import type { SshTarget } from './connection';
import { absolutePath, runScript, script } from './remote-scripts';

/** remoteWorkspaceBytes. Args: workspacePath. Prints `du -sk`'s line; exit 10 when it is not a real folder. */
export const MEASURE_WORKSPACE = script(
  'measure workspace',
  `
real_dir "$1" || exit 10
du -s -k -x -- "$1" 2>/dev/null
exit 0
`,
);

/** A walk of a large clone over SSH: minutes, not seconds. */
const MEASURE_TIMEOUT_MS = 10 * 60_000;

/** The bytes of the clone folder on the target; null when it is not there or `du` printed no total. */
export async function remoteWorkspaceBytes(target: SshTarget, workspacePath: string): Promise<number | null> {
  const result = await runScript(target, MEASURE_WORKSPACE, [absolutePath(workspacePath)], {
    timeoutMs: MEASURE_TIMEOUT_MS,
  });
  return result.code === 0 ? duBytes(result.stdout.toString('utf8')) : null;
}
