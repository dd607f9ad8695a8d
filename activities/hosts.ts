/** What workflows ask the records about hosts: whether one is down (its record is not live). */
import { hostLiveness } from '../db/hosts';
import type { ActivityDeps } from '../executors/support/deps';

export function hostRecordActivities({ pool }: ActivityDeps) {
  return {
    /** A host that never registered is not known to be down: its queue is tried as before. */
    async hostIsDown(hostId: string): Promise<boolean> {
      return (await hostLiveness(pool, hostId)) === 'down';
    },
  };
}
