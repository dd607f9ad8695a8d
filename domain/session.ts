/** A session's state, as its row records it. */
export type SessionState = 'starting' | 'running' | 'stopped' | 'exited' | 'failed';

export type SessionRoleName = 'materialized' | 'attached' | 'transitioned';
