/**
 * The ids a trace carries from the HTTP request down to each git or ssh command: the task, the
 * session and the operation (a cleanup job's `operationId`, the id of its workflow and of its row).
 * They travel as W3C baggage beside the trace context, through the workflow start's header and
 * each activity's, so a git command deep in an activity knows whose it is; every span that knows
 * them carries them as attributes. Only ids: never a path, a branch name or a message.
 *
 * With no OpenTelemetry SDK installed these are @opentelemetry/api's no-ops (no baggage is ever
 * set), so they cost nothing when tracing is off.
 */
import { propagation, type Attributes, type Context } from '@opentelemetry/api';

export interface TraceIds {
  taskId?: string;
  sessionId?: string;
  operationId?: string;
}

/** Each id's attribute and baggage key. */
const KEY: Readonly<Record<keyof TraceIds, string>> = {
  taskId: 'tws.task_id',
  sessionId: 'tws.session_id',
  operationId: 'tws.operation_id',
};
const NAMES = Object.keys(KEY) as (keyof TraceIds)[];

/** Ids are UUIDs (or the like): anything else in an id's place is not carried. */
const ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The ids an input object names at its top level (a workflow's or an activity's first argument). */
export function idsOf(value: unknown): TraceIds {
  const ids: TraceIds = {};
  if (typeof value !== 'object' || value === null) return ids;
  for (const name of NAMES) {
    const id = (value as Record<string, unknown>)[name];
    if (typeof id === 'string' && ID.test(id)) ids[name] = id;
  }
  return ids;
}

/** The ids the context's baggage carries. */
export function idsIn(ctx: Context): TraceIds {
  const baggage = propagation.getBaggage(ctx);
  const ids: TraceIds = {};
  if (!baggage) return ids;
  for (const name of NAMES) {
    const id = baggage.getEntry(KEY[name])?.value;
    if (id !== undefined && ID.test(id)) ids[name] = id;
  }
  return ids;
}

/** `ctx` with `ids` in its baggage (each replacing the one there). */
export function withIds(ctx: Context, ids: TraceIds): Context {
  let baggage = propagation.getBaggage(ctx) ?? propagation.createBaggage();
  let changed = false;
  for (const name of NAMES) {
    const id = ids[name];
    if (id === undefined) continue;
    baggage = baggage.setEntry(KEY[name], { value: id });
    changed = true;
  }
  return changed ? propagation.setBaggage(ctx, baggage) : ctx;
}

/** The ids as span attributes (`tws.task_id`, `tws.session_id`, `tws.operation_id`). */
export function idAttributes(ids: TraceIds): Attributes {
  const attributes: Attributes = {};
  for (const name of NAMES) if (ids[name] !== undefined) attributes[KEY[name]] = ids[name];
  return attributes;
}

/** Spans a service could not export and dropped, by service (worker/span-export-failures.ts). */
export const SPAN_EXPORTS_FAILED_TOTAL = 'tws_span_exports_failed_total';
