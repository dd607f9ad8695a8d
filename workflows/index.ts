export { launchSession } from './launch-session';
export { observeGitStatus } from './observe-git-status';
export { cleanupTask } from './cleanup-task';
export { cascadeCleanup } from './cascade-cleanup';
export { expireQuickChats } from './quick-chat-expiry';
export { stopSession } from './stop-session';
export { orphanSweep } from './orphan-sweep';
export { resumeSession } from './resume-session';
