export type SessionRoleName = 'materialized' | 'attached' | 'transitioned';
