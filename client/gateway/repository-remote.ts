/**
 * A repository's `remote` and `mergeStrategies` as a registration or a PATCH gives them [R8.6]:
 * checked (domain/remote.ts), a bad one a 400 that never quotes it. A URL carrying credentials is
 * refused, so no credential is stored, answered or logged.
 */
import { remoteProblem } from '../../domain/remote';
import { badRequest } from './api-error';

export function checkedRemote(remote: string): string {
  const problem = remoteProblem(remote);
  if (problem) throw badRequest(`${problem.problem}.`);
  return remote;
}

/** The strategies, each once, in the order given (the schema allows only known ones). */
export const checkedStrategies = (strategies: string[]): string[] => [...new Set(strategies)];
