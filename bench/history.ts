/**
 * Where a launch (or a cleanup) spends its time, read from its workflow history: how many workflow tasks and
 * activity tasks (each a round trip through the Temporal server), how long each waited in its
 * queue and how long it ran, and the local activities (markers) recorded on the way.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { round } from './stats';
import { launchWorkflowId } from '../domain/workflow-ids';

/** The marker name of a local activity's result in a history (a patch's marker is `core_patch`). */
export const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

export interface HistoryProfile {
  workflowId: string;
  /** The HTTP request as the client timed it (null when the workflow outlives the request). */
  httpMs: number | null;
  /** First to last history event. */
  workflowMs: number;
  events: number;
  workflowTasks: number;
  remoteActivities: string[];
  localActivityMarkers: number;
  /** Markers of patches (`patched()`): commands, not steps. */
  patchMarkers: number;
  searchAttributeUpserts: number;
  /** Which process ran each workflow task (its worker identity is `<pid>@<host>`). */
  workflowTasksRanIn: string[];
  /** The server handed the first workflow task back with the start (eager workflow start). */
  eagerStart: boolean;
  /** Sums over the launch: waiting in a task queue vs running, for workflow and activity tasks. */
  workflowTaskQueuedMs: number;
  workflowTaskRunningMs: number;
  activityQueuedMs: number;
  activityRunningMs: number;
  timeline: string[];
}

type Ts = temporal.api.history.v1.IHistoryEvent['eventTime'];

function tsMs(ts: Ts): number {
  if (!ts) return NaN;
  const seconds = ts.seconds as unknown;
  const s = typeof seconds === 'number' ? seconds : Number((seconds as { toString(): string }).toString());
  return s * 1000 + (ts.nanos ?? 0) / 1e6;
}

const EventType = temporal.api.enums.v1.EventType;

/** The benchmark's service processes by pid, to name the worker identities in a history. */
export function serviceRoles(services: {
  worker: { child: { pid?: number } };
  gateway: { child: { pid?: number } };
}): Map<number, string> {
  return new Map([
    [services.worker.child.pid ?? -1, 'worker'],
    [services.gateway.child.pid ?? -1, 'gateway'],
  ]);
}

/** The profile of the launch whose time was nearest the product's p50 (its workflow's history), or null when none was measured. */
export async function profileOfLaunch(
  client: Client,
  services: Parameters<typeof serviceRoles>[0],
  nearest: { sessionId: string; ms: number } | null | undefined,
): Promise<HistoryProfile | null> {
  return nearest
    ? profileWorkflow(client, launchWorkflowId(nearest.sessionId), nearest.ms, serviceRoles(services))
    : null;
}

export async function profileWorkflow(
  client: Client,
  workflowId: string,
  httpMs: number | null,
  roles: Map<number, string>,
): Promise<HistoryProfile> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const t0 = tsMs(events[0]?.eventTime);
  const scheduledAt = new Map<string, number>();
  const startedAt = new Map<string, number>();
  const profile: HistoryProfile = {
    workflowId,
    httpMs: httpMs === null ? null : round(httpMs),
    workflowMs: round(tsMs(events[events.length - 1]?.eventTime) - t0),
    events: events.length,
    workflowTasks: 0,
    remoteActivities: [],
    localActivityMarkers: 0,
    patchMarkers: 0,
    searchAttributeUpserts: 0,
    workflowTasksRanIn: [],
    eagerStart: events[0]?.workflowExecutionStartedEventAttributes?.eagerExecutionAccepted === true,
    workflowTaskQueuedMs: 0,
    workflowTaskRunningMs: 0,
    activityQueuedMs: 0,
    activityRunningMs: 0,
    timeline: [],
  };
  for (const e of events) {
    const t = tsMs(e.eventTime);
    const id = String(e.eventId);
    const type = e.eventType ?? 0;
    profile.timeline.push(`+${(t - t0).toFixed(1)} ms ${String(EventType[type]).replace('EVENT_TYPE_', '')}`);
    switch (type) {
      case EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
        profile.workflowTasks++;
        scheduledAt.set(id, t);
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
        profile.workflowTaskQueuedMs +=
          t - (scheduledAt.get(String(e.workflowTaskStartedEventAttributes?.scheduledEventId)) ?? t);
        profile.workflowTasksRanIn.push(
          roles.get(Number.parseInt(e.workflowTaskStartedEventAttributes?.identity ?? '', 10)) ?? 'another process',
        );
        startedAt.set(id, t);
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        profile.workflowTaskRunningMs +=
          t - (startedAt.get(String(e.workflowTaskCompletedEventAttributes?.startedEventId)) ?? t);
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        profile.remoteActivities.push(e.activityTaskScheduledEventAttributes?.activityType?.name ?? '?');
        scheduledAt.set(id, t);
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
        profile.activityQueuedMs +=
          t - (scheduledAt.get(String(e.activityTaskStartedEventAttributes?.scheduledEventId)) ?? t);
        startedAt.set(id, t);
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
        profile.activityRunningMs +=
          t - (startedAt.get(String(e.activityTaskCompletedEventAttributes?.startedEventId)) ?? t);
        break;
      case EventType.EVENT_TYPE_MARKER_RECORDED:
        if (e.markerRecordedEventAttributes?.markerName === LOCAL_ACTIVITY_MARKER) profile.localActivityMarkers++;
        else profile.patchMarkers++;
        break;
      case EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
        profile.searchAttributeUpserts++;
        break;
      default:
        break; // other events: not measured
    }
  }
  for (const key of ['workflowTaskQueuedMs', 'workflowTaskRunningMs', 'activityQueuedMs', 'activityRunningMs'] as const)
    profile[key] = round(profile[key]);
  return profile;
}
