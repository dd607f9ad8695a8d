/**
 * What Ctrl-C on `make start` leaves running: the agents of this host. They are not the
 * service's to stop on its way out (an agent's work outlives the service; the next start finds
 * it again), so the launcher says how many there are and how to stop them.
 */
import { all } from './cli-io';

/** How long the count may hold up the stop. */
const COUNT_TIMEOUT_MS = 3000;

interface ListedSession {
  id: string;
  execution: { hostId?: string } | null;
}

/** The line the launcher prints on stop, or null when no agent of this host runs. */
export async function agentsLeftLine(apiUrl: string, operatorToken: string, hostId: string): Promise<string | null> {
  const target = { url: apiUrl, token: operatorToken };
  const counted = Promise.all(
    ['running', 'starting'].map((state) => all(target, '/v1/sessions', { state }) as Promise<ListedSession[]>),
  ).then((lists) => lists.flat().filter((s) => s.execution?.hostId === hostId));
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), COUNT_TIMEOUT_MS)));
  const sessions = await Promise.race([counted.catch(() => null), late]).finally(() => clearTimeout(timer));
  if (sessions === null)
    return 'could not count the agents left running (the API did not answer): the next make start finds them; `npx tws stop --all` then stops them';
  if (sessions.length === 0) return null;
  const n = sessions.length;
  return (
    `${n} agent${n === 1 ? '' : 's'} keep${n === 1 ? 's' : ''} running on this host (session${n === 1 ? '' : 's'} ${sessions.map((s) => s.id).join(', ')}): ` +
    'agents outlive the service, and the next make start finds them again. To stop them: run `npx tws stop --all` ' +
    '(or `npx tws stop <sessionId>`) while the system is up, that is after the next make start'
  );
}
