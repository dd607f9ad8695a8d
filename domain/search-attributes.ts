import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Keyword search attributes an operator filters on in the Temporal UI (`TaskId="…"`). */
export const TaskIdAttr = defineSearchAttributeKey('TaskId', SearchAttributeType.KEYWORD);
export const SessionIdAttr = defineSearchAttributeKey('SessionId', SearchAttributeType.KEYWORD);
export const ExecutorTypeAttr = defineSearchAttributeKey('ExecutorType', SearchAttributeType.KEYWORD);
export const TriggerAttr = defineSearchAttributeKey('Trigger', SearchAttributeType.KEYWORD);
export const PhaseAttr = defineSearchAttributeKey('Phase', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [TaskIdAttr, SessionIdAttr, ExecutorTypeAttr, TriggerAttr, PhaseAttr];
