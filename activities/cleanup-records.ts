/**
 * Database steps of cleanup, as local activities, under the names workflows call and recorded
 * histories replay: one factory the worker registers, composed of the steps of one job and those
 * of cleanups over many tasks.
 */
import { cleanupBulkRecordActivities } from './cleanup-records-bulk';
import { cleanupJobRecordActivities } from './cleanup-records-job';
import type { ActivityDeps } from '../executors/support/deps';

export function cleanupRecordActivities(deps: ActivityDeps) {
  return { ...cleanupJobRecordActivities(deps), ...cleanupBulkRecordActivities(deps) };
}
