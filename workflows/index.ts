export { launchSession } from './launch-session';
export { observeGitStatus } from './observe-git-status';
