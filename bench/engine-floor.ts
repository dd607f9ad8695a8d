/**
 * The engine floor: what Temporal itself costs for a workflow of a scenario's shape
 * with no work in it, measured in the same run as the product, against the same dev server.
 * The shape is read from one of the product's own histories (local activity markers, remote
 * activities and the workflow task that scheduled them, child workflows, an update and where it
 * completed, eager or not), and `shaped` (temporal-floor-workflows.ts) replays those steps with
 * activities that do nothing, on a worker in this process. Eager where the product was eager:
 * the client then shares the worker's connection, as the gateway's does.
 */
import { randomUUID } from 'node:crypto';
import { Client, WithStartWorkflowOperation } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { LOCAL_ACTIVITY_MARKER } from './history';
import { shapedReady, type ShapeStep } from './temporal-floor-workflows';
import type { WorkflowShape } from './workflow-shape';

const EventType = temporal.api.enums.v1.EventType;

/** The steps of a history, in order. Local activities are markers; remote activities and children scheduled by one workflow task completion run side by side. */
export async function shapeOfWorkflow(
  client: Client,
  workflowId: string,
  childShape?: (childWorkflowId: string) => Promise<ShapeStep[]>,
): Promise<WorkflowShape> {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const steps: ShapeStep[] = [];
  const counts = { localActivities: 0, activities: 0, updates: 0, children: 0, workflowTasks: 0 };
  let lastCompletion = -1;
  let completionOfLast = -2;
  let firstChild: string | null = null;
  const childrenPerTask = new Map<number, number>();
  for (const e of events) {
    switch (e.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        lastCompletion = Number(e.eventId);
        counts.workflowTasks++;
        break;
      case EventType.EVENT_TYPE_MARKER_RECORDED:
        // A patch's marker (`core_patch`) is a command of the workflow task, not a step that runs.
        if (e.markerRecordedEventAttributes?.markerName !== LOCAL_ACTIVITY_MARKER) break;
        counts.localActivities++;
        steps.push({ kind: 'local' });
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: {
        counts.activities++;
        const last = steps[steps.length - 1];
        if (last?.kind === 'activities' && completionOfLast === lastCompletion) last.count++;
        else steps.push({ kind: 'activities', count: 1 });
        completionOfLast = lastCompletion;
        break;
      }
      case EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED: {
        counts.children++;
        firstChild ??= e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId ?? null;
        childrenPerTask.set(lastCompletion, (childrenPerTask.get(lastCompletion) ?? 0) + 1);
        const last = steps[steps.length - 1];
        if (last?.kind === 'children') last.count++;
        else steps.push({ kind: 'children', count: 1, lanes: 1, shape: [] });
        completionOfLast = lastCompletion;
        break;
      }
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
        counts.updates++;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED: {
        // Recorded with the workflow task that also started the first children (the barrier
        // answers before the members are cleaned): it goes before them.
        const last = steps[steps.length - 1];
        if (last?.kind === 'children') steps.splice(steps.length - 1, 0, { kind: 'update_done' });
        else steps.push({ kind: 'update_done' });
        break;
      }
      default:
        break; // other events: not measured
    }
  }
  for (const s of steps) {
    if (s.kind !== 'children') continue;
    s.lanes = Math.max(1, ...childrenPerTask.values());
    s.shape = firstChild && childShape ? await childShape(firstChild) : [];
  }
  return {
    eager: events[0]?.workflowExecutionStartedEventAttributes?.eagerExecutionAccepted === true,
    updateWithStart: counts.updates > 0,
    steps,
    counts,
  };
}

/** The steps of a child history, children of children not followed. */
export async function childStepsOf(client: Client, workflowId: string): Promise<ShapeStep[]> {
  return (await shapeOfWorkflow(client, workflowId)).steps;
}

export interface EngineFloor {
  /** One workflow of this shape, started and awaited as the product's caller does; milliseconds. */
  time(shape: WorkflowShape): Promise<number>;
  /** `n` workflows of this shape started at once, all awaited; wall milliseconds. */
  timeBatch(shape: WorkflowShape, n: number): Promise<number>;
  stop(): Promise<void>;
}

export async function startEngineFloor(client: Client, address: string, namespace: string): Promise<EngineFloor> {
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: console.error };
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('./temporal-floor-workflows'),
    logger: quiet,
  });
  const connection = await NativeConnection.connect({ address });
  const sharing = new Client({ connection, namespace });
  const taskQueue = `bench-engine-floor-${randomUUID()}`;
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowBundle,
    activities: { nothing: async () => {} },
  });
  const running = worker.run();

  const once = async (shape: WorkflowShape): Promise<void> => {
    const options = {
      workflowId: `bench-engine-floor/${randomUUID()}`,
      taskQueue,
      args: [shape.steps] as [ShapeStep[]],
    };
    if (shape.updateWithStart) {
      const startWorkflowOperation = new WithStartWorkflowOperation('shaped', {
        ...options,
        workflowIdConflictPolicy: 'FAIL',
      });
      await client.workflow.executeUpdateWithStart(shapedReady, { startWorkflowOperation });
      await (await startWorkflowOperation.workflowHandle()).result();
      return;
    }
    const handle = await (shape.eager ? sharing : client).workflow.start('shaped', {
      ...options,
      requestEagerStart: shape.eager,
    });
    await handle.result();
  };
  const floor: EngineFloor = {
    async time(shape) {
      const start = performance.now();
      await once(shape);
      return performance.now() - start;
    },
    async timeBatch(shape, n) {
      const start = performance.now();
      await Promise.all(Array.from({ length: n }, () => once(shape)));
      return performance.now() - start;
    },
    async stop() {
      worker.shutdown();
      await running.catch(() => {});
      await connection.close();
    },
  };
  // Warm-up: the first runs pay the bundle's first load and the connection's first calls.
  for (let i = 0; i < 3; i++)
    await floor.time({
      eager: true,
      updateWithStart: false,
      steps: [{ kind: 'local' }],
      counts: { localActivities: 1, activities: 0, updates: 0, children: 0, workflowTasks: 1 },
    });
  return floor;
}
