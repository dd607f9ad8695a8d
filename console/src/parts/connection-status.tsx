/** Whether the console hears the service: live, connecting, or lost (and retrying by itself). */
import { useEffect, useState } from 'preact/hooks';
import type { ChangeFeed, ConnectionState } from '../change-feed';

const WORDS: Record<ConnectionState, string> = {
  live: 'Live',
  connecting: 'Connecting…',
  lost: 'Connection to the service lost; retrying…',
};

export function ConnectionStatus({ feed }: { feed: ChangeFeed }) {
  const [state, setState] = useState<ConnectionState>(feed.state);
  useEffect(() => {
    setState(feed.state);
    return feed.onState(setState);
  }, [feed]);
  return (
    <span class={`connection connection-${state}`} data-testid="connection" data-state={state} role="status">
      {WORDS[state]}
    </span>
  );
}
