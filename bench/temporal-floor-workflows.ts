/**
 * Workflows of the engine floor (bench/engine-floor.ts, bench/temporal-floor.ts): the shape of a
 * product workflow with no work in it. `shaped` runs the steps a real history recorded, in its
 * order: local activities one after another, remote activities scheduled in the same workflow
 * task side by side, child workflows (each shaped itself) as many at once as the product ran
 * (its lanes: the most started by one workflow task), and an update that completes where
 * the product's did (update-with-start: the caller's answer waits for it).
 */
import {
  condition,
  defineUpdate,
  executeChild,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';

const { nothing } = proxyLocalActivities<{ nothing(): Promise<void> }>({ startToCloseTimeout: '10 seconds' });
const remote = proxyActivities<{ nothing(): Promise<void> }>({ startToCloseTimeout: '10 seconds' });

export type ShapeStep =
  | { kind: 'local' }
  | { kind: 'activities'; count: number }
  | { kind: 'children'; count: number; lanes: number; shape: ShapeStep[] }
  | { kind: 'update_done' };

export const shapedReady = defineUpdate<void>('shapedReady');

export async function emptyWorkflow(): Promise<void> {}

export async function twoLocalActivities(): Promise<void> {
  await nothing();
  await nothing();
}

export async function shaped(steps: ShapeStep[]): Promise<void> {
  let updateDone = false;
  setHandler(shapedReady, async () => {
    await condition(() => updateDone);
  });
  for (const step of steps) {
    if (step.kind === 'local') await nothing();
    else if (step.kind === 'activities') await Promise.all(Array.from({ length: step.count }, () => remote.nothing()));
    else if (step.kind === 'update_done') updateDone = true;
    else {
      // At most `lanes` at once, each lane taking the next child when its previous one ends.
      let next = 0;
      const lane = async () => {
        while (next < step.count)
          await executeChild(shaped, {
            workflowId: `${workflowInfo().workflowId}/child-${next++}`,
            args: [step.shape],
          });
      };
      await Promise.all(Array.from({ length: Math.max(1, Math.min(step.lanes, step.count)) }, lane));
    }
  }
  updateDone = true;
}
