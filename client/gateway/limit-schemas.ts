/** The schemas of agents' limits and use: a launch's `limits`, and the task and session views'. */
import { Type } from '@sinclair/typebox';

/** An agent's limits: bytes of memory (its /tmp counted), processes, CPUs. */
export const Limits = Type.Object({
  memoryBytes: Type.Integer({ minimum: 1 }),
  pids: Type.Integer({ minimum: 1 }),
  cpus: Type.Number({ exclusiveMinimum: 0 }),
});

/** What a launch may ask for: any of the three. */
export const LimitsBody = Type.Partial(Limits, { additionalProperties: false });

/** What a task's agents use together now, as its host last read it. */
export const Usage = Type.Object({ memoryBytes: Type.Number(), pids: Type.Number(), measuredAt: Type.String() });

/** A task's: each agent's by default and all of them together at most (null: limits off), its disk quota (null: none). */
export const TaskLimits = Type.Object({
  agent: Type.Union([Limits, Type.Null()]),
  task: Type.Union([Limits, Type.Null()]),
  diskQuotaBytes: Type.Union([Type.Number(), Type.Null()]),
  overDiskQuota: Type.Boolean(),
});
