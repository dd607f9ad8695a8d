/**
 * Links from an answer to the run behind it in the Temporal UI. The UI's
 * `/namespaces/<ns>/workflows/<workflowId>` opens the workflow's latest run: for a cleanup job
 * continued by a new run (the consistency check, a retry after a lost run) that is the one to
 * read, so no run id is pinned. Without a known UI (an engine of the operator's and no
 * TWS_TEMPORAL_UI_URL) there is no link.
 */
import type { Config } from '../../../domain/config';

export const temporalLinks = (
  config: Pick<Config, 'temporalUiUrl' | 'temporalNamespace'>,
  workflowId: string,
): { temporal?: string } =>
  config.temporalUiUrl
    ? {
        temporal: `${config.temporalUiUrl}/namespaces/${encodeURIComponent(config.temporalNamespace)}/workflows/${encodeURIComponent(workflowId)}`,
      }
    : {};
