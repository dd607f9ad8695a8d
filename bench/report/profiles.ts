/**
 * The "where the time goes" evidence of bench/results/latest.md: one scenario's workflow history,
 * beside the same activities called directly and the floor's parts, so that orchestration and
 * work can be told apart.
 */
import type { StepTimings } from '../direct-steps';
import type { HistoryProfile } from '../history';
import { ms } from './format';

function directLines(p: HistoryProfile | null, steps: StepTimings | undefined): string[] {
  if (!steps) return [];
  const parts = Object.entries(steps)
    .filter(([name]) => name !== 'total')
    .map(([name, s]) => `${name} ${ms(s.p50)}`);
  const total = steps.total?.p50;
  const orchestration =
    p && total !== undefined
      ? ` The profiled workflow took ${ms(p.workflowMs)} first→last event: about ${ms(p.workflowMs - total)} is orchestration (queues, workflow tasks, the SDK), not the work.`
      : '';
  return [
    `The same activities called directly in one process (p50 of ${steps.total?.n ?? 0}): ${parts.join(', ')}; together ${ms(total)}.${orchestration}`,
    '',
  ];
}

function floorLine(parts: Record<string, number> | undefined): string[] {
  if (!parts) return [];
  return [
    `The floor's parts (p50): ${Object.entries(parts)
      .map(([k, v]) => `${k} ${ms(v)}`)
      .join(', ')}.`,
    '',
  ];
}

export function profileLines(
  name: string,
  p: HistoryProfile | null,
  steps?: StepTimings,
  floorParts?: Record<string, number>,
): string[] {
  if (!p) return [];
  return [
    `**${name}** (\`${p.workflowId}\`): ${p.httpMs === null ? '' : `HTTP ${ms(p.httpMs)}, `}workflow first→last event ${ms(p.workflowMs)} ` +
      `${p.httpMs === null ? '' : `(so ${ms(p.httpMs - p.workflowMs)} in the gateway, the client's start and result round trips)`}; ${p.events} history events, ` +
      `${p.workflowTasks} workflow tasks (queued ${ms(p.workflowTaskQueuedMs)}, running ${ms(p.workflowTaskRunningMs)} in the ${(p.workflowTasksRanIn ?? []).join(', ')}${p.eagerStart ? ', started eagerly' : ''} — local activities run inside them: ${p.localActivityMarkers} markers, and ${p.patchMarkers ?? 0} patch markers), ` +
      `${p.remoteActivities.length} host-queue activities [${p.remoteActivities.join(', ')}] (queued ${ms(p.activityQueuedMs)}, running ${ms(p.activityRunningMs)}), ${p.searchAttributeUpserts} search-attribute upserts.`,
    '',
    '<details><summary>history timeline</summary>',
    '',
    '```',
    ...p.timeline,
    '```',
    '</details>',
    '',
    ...directLines(p, steps),
    ...floorLine(floorParts),
  ];
}
