/**
 * What Ctrl-C on `make start` leaves running: the agents of this host. They are not the
 * service's to stop on its way out (an agent's work outlives the service; the next start finds
 * it again), so the launcher says how many there are and how to stop them.
 */

/** How long the count may hold up the stop. */
const COUNT_TIMEOUT_MS = 3000;

interface ListedSession {
  id: string;
  execution: { hostId?: string } | null;
}

/** Every page of `GET /v1/sessions?state=…`; throws on any answer but 200 (the line then says it could not count). */
async function sessionsIn(apiUrl: string, operatorToken: string, state: string): Promise<ListedSession[]> {
  const items: ListedSession[] = [];
  let cursor: string | null = null;
  do {
    const q = new URLSearchParams({ state, limit: '200', ...(cursor ? { cursor } : {}) });
    const res = await fetch(`${apiUrl}/v1/sessions?${q}`, { headers: { authorization: `Bearer ${operatorToken}` } });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const page = (await res.json()) as { items: ListedSession[]; nextCursor: string | null };
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

/** The line the launcher prints on stop, or null when no agent of this host runs. */
export async function agentsLeftLine(apiUrl: string, operatorToken: string, hostId: string): Promise<string | null> {
  const counted = Promise.all(['running', 'starting'].map((state) => sessionsIn(apiUrl, operatorToken, state))).then(
    (lists) => lists.flat().filter((s) => s.execution?.hostId === hostId),
  );
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
