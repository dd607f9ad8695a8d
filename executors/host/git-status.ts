/** Git status of a workspace on this host, with the time it was taken [R1.5]. */
import type { GitStatusObservation, GitStatusTarget } from '../../domain/git-status';
import { aheadBehind, statusWithHead } from '../../git/worktree-status';
import type { ActivityDeps } from '../support/deps';
import { isRealDirectory } from './workspace-fs';
import { readyToRead } from './branch-home';

export async function readHostGitStatus(
  { config, logger }: ActivityDeps,
  target: GitStatusTarget,
): Promise<GitStatusObservation[]> {
  const gitOptions = { binary: config.gitBinary };
  const observations: GitStatusObservation[] = [];
  for (const slot of target.slots) {
    const observedAt = new Date().toISOString();
    if (!(await isRealDirectory(slot.path))) continue; // nothing to observe; the stored status stays as it was
    await readyToRead({ config, logger }, slot.path, slot.repositoryId);
    // Two git processes side by side: the status with its branch and HEAD, and the counts.
    const [{ branch, head, files }, counts] = await Promise.all([
      statusWithHead(slot.path, gitOptions),
      aheadBehind(slot.path, slot.baseBranch, gitOptions),
    ]);
    observations.push({
      repositoryId: slot.repositoryId,
      workspacePath: slot.path,
      observedAt,
      branch,
      head,
      ahead: counts?.ahead ?? 0,
      behind: counts?.behind ?? 0,
      files,
    });
  }
  return observations;
}
