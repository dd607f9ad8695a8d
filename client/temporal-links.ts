/**
 * Links from an answer to the run behind it in the Temporal UI. The UI's
 * `/namespaces/<ns>/workflows/<workflowId>` opens the workflow's latest run: for a cleanup job
 * continued by a new run (the consistency check, a retry after a lost run) that is the one to
 * read, so no run id is pinned.
 */
import type { Config } from '../domain/config';

export const temporalLinks = (
  config: Pick<Config, 'temporalUiUrl' | 'temporalNamespace'>,
  workflowId: string,
): { temporal: string } => ({
  temporal: `${config.temporalUiUrl}/namespaces/${encodeURIComponent(config.temporalNamespace)}/workflows/${encodeURIComponent(workflowId)}`,
});
