/** The repository checks of a registration, on the host that holds the repository (its roots, its git). */
import { checkRepository, type RepositoryCheck } from '../git/repository-check';
import type { ActivityDeps } from './deps';

export function repositoryCheckActivities({ config }: ActivityDeps) {
  return {
    async checkRepository(input: { path: string; defaultBranch?: string }): Promise<RepositoryCheck> {
      return checkRepository(input, config);
    },
  };
}
