import { describe, expect, it } from 'vitest';
import { CLEANUP_TRIGGERS, cascadeMembersToPrepare, dirtyWorkHandling, removesTask } from '../../domain/cleanup';

describe('what each cleanup trigger does with the task and its dirty work', () => {
  it('delete, board delete and quick-chat expiry remove the task; archive and resets keep it', () => {
    expect(CLEANUP_TRIGGERS.filter(removesTask)).toEqual(['delete', 'board_delete', 'quick_chat_expiry']);
  });

  it('dirty work is saved with a delete consent, and always on quick-chat expiry (no one can consent) and idle release (restored later); kept otherwise', () => {
    expect(CLEANUP_TRIGGERS.map((t) => [t, dirtyWorkHandling(t, false), dirtyWorkHandling(t, true)])).toEqual([
      ['archive', 'keep', 'keep'],
      ['delete', 'keep', 'save'],
      ['board_delete', 'keep', 'save'],
      ['quick_chat_expiry', 'save', 'save'],
      ['environment_reset', 'keep', 'keep'],
      ['environment_abandon', 'keep', 'keep'],
      ['borrow_ended', 'keep', 'keep'],
      ['idle_release', 'save', 'save'],
    ]);
  });

  it('a cascade archive leaves out the members already archived and names them; a delete takes every member', () => {
    const members = [{ taskId: 'child' }, { taskId: 'root' }];
    expect(cascadeMembersToPrepare('archive', members, new Set(['root']))).toEqual({
      prepared: [{ taskId: 'child' }],
      skipped: [{ taskId: 'root', reason: 'already_archived' }],
    });
    expect(cascadeMembersToPrepare('archive', members, new Set())).toEqual({ prepared: members, skipped: [] });
    expect(cascadeMembersToPrepare('delete', members, new Set(['root', 'child']))).toEqual({
      prepared: members,
      skipped: [],
    });
  });
});
