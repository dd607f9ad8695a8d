export { launchSession } from './launch-session';
