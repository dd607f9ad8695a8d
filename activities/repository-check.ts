/** The repository checks of a registration, on the host that holds the repository (its roots, its git). */
import { checkRepository, type RepositoryCheck, type RepositoryCheckInput } from '../git/repository-check';
import type { ActivityDeps } from '../executors/support/deps';

export function repositoryCheckActivities({ config }: ActivityDeps) {
  return {
    async checkRepository(input: RepositoryCheckInput): Promise<RepositoryCheck> {
      return checkRepository(input, config);
    },
  };
}
