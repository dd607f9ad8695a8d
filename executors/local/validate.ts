/** A `local` workspace is the registered source checkout itself: validated read-only before every start [R1.2, R3.2]. */
import type { SlotPlan, ValidationProblem } from '../../domain/launch';
import { checkoutIdentity, commonDir } from '../../git/checkout';
import { gitAt } from '../../git/git';
import { resolveCommit } from '../../git/branches';
import { isRealDirectory } from '../host/workspace-fs';

export async function localSlotProblem(slot: SlotPlan, gitBinary: string): Promise<ValidationProblem | null> {
  const gitOptions = { binary: gitBinary };
  const dir = slot.recorded?.worktreePath ?? slot.worktreePath;
  // Two git processes side by side (the directory's top level and common dir in one, the
  // source's common dir in the other), judged in the old order.
  const [realDirectory, mine, source] = await Promise.all([
    isRealDirectory(dir),
    checkoutIdentity(dir, gitOptions),
    commonDir(slot.sourcePath, gitOptions),
  ]);
  if (!realDirectory) return 'not_a_directory';
  if (!mine) return 'not_a_checkout';
  if (!source || mine.commonDir !== source) return 'repository_mismatch';
  // The registered path may now hold another repository (replaced, re-initialised): its common
  // dir is then its own, so only the identity recorded at registration tells them apart.
  if (slot.sourceRootCommit && !(await resolveCommit(gitAt(dir, gitOptions), slot.sourceRootCommit)))
    return 'repository_mismatch';
  return null;
}
