/** The schemas of agents' limits and use: a launch's `limits`, and the task and session views'. */
import { Type } from '@sinclair/typebox';
import { LIMIT_MINIMUM } from '../../domain/limits';

/** An agent's limits: bytes of memory (its /tmp counted), processes, CPUs. */
export const Limits = Type.Object({
  memoryBytes: Type.Integer({ minimum: 1 }),
  pids: Type.Integer({ minimum: 1 }),
  cpus: Type.Number({ exclusiveMinimum: 0 }),
});

/**
 * What a launch may ask for: any of the three, each at least what every executor can enforce
 * (domain/limits.ts), so that a smaller one is a 400 naming the minimum before anything is made.
 */
export const LimitsBody = Type.Partial(
  Type.Object({
    memoryBytes: Type.Integer({ minimum: LIMIT_MINIMUM.memoryBytes }),
    pids: Type.Integer({ minimum: LIMIT_MINIMUM.pids }),
    cpus: Type.Number({ minimum: LIMIT_MINIMUM.cpus }),
  }),
  { additionalProperties: false },
);

/** What a task's agents use together now, as its host last read it. */
export const Usage = Type.Object({ memoryBytes: Type.Number(), pids: Type.Number(), measuredAt: Type.String() });

/** A task's: each agent's by default and all of them together at most (null: limits off), its disk quota (null: none). */
export const TaskLimits = Type.Object({
  agent: Type.Union([Limits, Type.Null()]),
  task: Type.Union([Limits, Type.Null()]),
  diskQuotaBytes: Type.Union([Type.Number(), Type.Null()]),
  overDiskQuota: Type.Boolean(),
});

/**
 * `PATCH /v1/tasks/:id` (operator): a task's own disk quota in bytes, raised or lowered after its
 * creation; null is the operator's default (TWS_TASK_DISK_QUOTA) again. Applies to its next launch.
 */
export const PatchTaskBody = Type.Object(
  { diskQuotaBytes: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]) },
  { additionalProperties: false },
);
