/** What every page of a signed-in console shares: the API with its token, the role, the live feed. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Api } from './api';
import type { ChangeFeed } from './change-feed';

export type Role = 'user' | 'operator';

export interface ConsoleSession {
  api: Api;
  role: Role;
  feed: ChangeFeed;
}

export const SessionContext = createContext<ConsoleSession | null>(null);

export function useSession(): ConsoleSession {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside a signed-in console');
  return session;
}
