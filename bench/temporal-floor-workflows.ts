/** Workflows of the Temporal-floor diagnostic (bench/temporal-floor.ts): no work at all. */
import { proxyLocalActivities } from '@temporalio/workflow';

const { nothing } = proxyLocalActivities<{ nothing(): Promise<void> }>({ startToCloseTimeout: '10 seconds' });

export async function emptyWorkflow(): Promise<void> {}

export async function twoLocalActivities(): Promise<void> {
  await nothing();
  await nothing();
}
