/** The console's pages by their hash (console-contract): the token never goes in a URL, only these. */
export type Route =
  | { page: 'board' }
  | { page: 'task'; taskId: string }
  | { page: 'cleanup-jobs' }
  | { page: 'hosts' }
  | { page: 'unknown'; hash: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function routeOf(hash: string): Route {
  const path = hash.replace(/^#/, '') || '/';
  if (path === '/' || path === '') return { page: 'board' };
  if (path === '/cleanup-jobs') return { page: 'cleanup-jobs' };
  if (path === '/hosts') return { page: 'hosts' };
  const task = /^\/tasks\/([^/]+)$/.exec(path);
  if (task && UUID.test(task[1]!)) return { page: 'task', taskId: task[1]! };
  return { page: 'unknown', hash: path };
}

export const taskHref = (taskId: string) => `#/tasks/${taskId}`;
