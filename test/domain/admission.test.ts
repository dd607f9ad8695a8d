import { describe, expect, it } from 'vitest';
import { ADMISSION_TABLE, classifyEnvironment, decideAdmission } from '../../domain/admission';

describe('admission table [R1]', () => {
  it('new_workspace: elect, refuse while preparing, attach when ready and complete, re-elect a never-materialized failure', () => {
    expect(decideAdmission('new_workspace', 'none')).toEqual({ kind: 'materialize' });
    expect(decideAdmission('new_workspace', 'creating_materializer_alive')).toMatchObject({
      kind: 'refuse',
      code: 'workspace_preparing',
    });
    expect(decideAdmission('new_workspace', 'creating_materializer_gone')).toMatchObject({
      kind: 'refuse',
      code: 'workspace_reuse_unsafe',
      markEnvironmentFailed: true,
    });
    expect(decideAdmission('new_workspace', 'ready_complete')).toEqual({ kind: 'attach' });
    expect(decideAdmission('new_workspace', 'ready_incomplete')).toMatchObject({
      kind: 'refuse',
      code: 'workspace_reuse_unsafe',
    });
    expect(decideAdmission('new_workspace', 'failed_never_materialized')).toEqual({ kind: 'materialize' });
    expect(decideAdmission('new_workspace', 'failed_after_materialization')).toMatchObject({
      kind: 'refuse',
      code: 'workspace_reuse_unsafe',
    });
  });

  it("inherit_parent never creates an environment of its own: it materializes only its parent's released one again [R6.10]", () => {
    for (const [situation, decision] of Object.entries(ADMISSION_TABLE.inherit_parent))
      if (situation !== 'released') expect(decision.kind, situation).not.toBe('materialize');
    // Released means the parent's environment row is there: its materializer is elected again, no row is made.
    expect(decideAdmission('inherit_parent', 'released')).toEqual({ kind: 'materialize' });
    expect(decideAdmission('inherit_parent', 'none')).toMatchObject({ code: 'workspace_reuse_unsafe' });
    expect(decideAdmission('inherit_parent', 'ready_complete')).toEqual({ kind: 'attach' });
  });

  it('shared_group elects one materializer for the group and attaches members to it', () => {
    expect(decideAdmission('shared_group', 'none')).toEqual({ kind: 'materialize' });
    expect(decideAdmission('shared_group', 'creating_materializer_alive')).toMatchObject({
      code: 'workspace_preparing',
    });
    expect(decideAdmission('shared_group', 'ready_complete')).toEqual({ kind: 'attach' });
  });

  it('classifies inventory completeness: exactly one active row per slot [R1.1]', () => {
    const ready = { status: 'ready' as const, materialized: true, materializerState: 'running' };
    expect(classifyEnvironment({ ...ready, activeRowsPerSlot: [1, 1] })).toBe('ready_complete');
    expect(classifyEnvironment({ ...ready, activeRowsPerSlot: [1, 0] })).toBe('ready_incomplete');
    expect(classifyEnvironment({ ...ready, activeRowsPerSlot: [2] })).toBe('ready_incomplete');
    expect(classifyEnvironment({ ...ready, status: 'stopped', activeRowsPerSlot: [1] })).toBe('ready_complete');
  });

  it('classifies a creating environment by its materializer, and a failed one by whether it ever materialized', () => {
    const creating = { status: 'creating' as const, materialized: false, activeRowsPerSlot: [] };
    expect(classifyEnvironment({ ...creating, materializerState: 'starting' })).toBe('creating_materializer_alive');
    expect(classifyEnvironment({ ...creating, materializerState: 'failed' })).toBe('creating_materializer_gone');
    expect(classifyEnvironment({ ...creating, materializerState: null })).toBe('creating_materializer_gone');
    expect(
      classifyEnvironment({ status: 'failed', materialized: false, materializerState: null, activeRowsPerSlot: [] }),
    ).toBe('failed_never_materialized');
    expect(
      classifyEnvironment({ status: 'failed', materialized: true, materializerState: null, activeRowsPerSlot: [] }),
    ).toBe('failed_after_materialization');
    expect(classifyEnvironment(null)).toBe('none');
  });
});
