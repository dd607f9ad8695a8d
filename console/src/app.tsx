/** The console's frame: sign-in, then the header (role, navigation, connection) and the page the hash names. */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { createApi } from './api';
import { openChangeFeed } from './change-feed';
import { ConnectionStatus } from './parts/connection-status';
import { Board } from './pages/board';
import { CleanupJobs } from './pages/cleanup-jobs';
import { Hosts } from './pages/hosts';
import { roleOf, SignIn } from './pages/sign-in';
import { TaskPage } from './pages/task-page';
import { routeOf, type Route } from './route';
import { SessionContext, type ConsoleSession, type Role } from './session-context';
import { tokenStore } from './token-store';

const tokens = tokenStore(window.sessionStorage);

function useRoute(): Route {
  const [route, setRoute] = useState(() => routeOf(window.location.hash));
  useEffect(() => {
    const onChange = () => setRoute(routeOf(window.location.hash));
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

export function App() {
  const [signedIn, setSignedIn] = useState<{ token: string; role: Role } | null>(null);
  const [checking, setChecking] = useState(() => tokens.read() !== null);

  // A reload of the tab keeps the token (sessionStorage) and learns the role again.
  useEffect(() => {
    const token = tokens.read();
    if (!token) return;
    roleOf(token)
      .then((role) => setSignedIn({ token, role }))
      .catch(() => tokens.forget())
      .finally(() => setChecking(false));
  }, []);

  if (checking) return <p class="loading">Signing in…</p>;
  if (!signedIn)
    return (
      <SignIn
        onSignedIn={(token, role) => {
          tokens.save(token);
          setSignedIn({ token, role });
        }}
      />
    );
  return (
    <SignedIn
      token={signedIn.token}
      role={signedIn.role}
      onSignOut={() => {
        tokens.forget();
        setSignedIn(null);
      }}
    />
  );
}

function SignedIn({ token, role, onSignOut }: { token: string; role: Role; onSignOut: () => void }) {
  const route = useRoute();
  const session = useMemo<ConsoleSession>(() => {
    const api = createApi(token);
    return { api, role, feed: openChangeFeed(api) };
  }, [token, role]);
  useEffect(() => () => session.feed.close(), [session]);

  return (
    <SessionContext.Provider value={session}>
      <header class="top">
        <nav>
          <a href="#/" data-testid="nav-board">
            Board
          </a>
          {role === 'operator' ? (
            <>
              <a href="#/cleanup-jobs" data-testid="nav-cleanup-jobs">
                Cleanup jobs
              </a>
              <a href="#/hosts" data-testid="nav-hosts">
                Hosts
              </a>
            </>
          ) : null}
        </nav>
        <ConnectionStatus feed={session.feed} />
        <span class="who">
          Signed in as <b data-testid="role">{role}</b>
        </span>
        <button type="button" data-testid="sign-out" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <main>
        <Page route={route} role={role} />
      </main>
    </SessionContext.Provider>
  );
}

function Page({ route, role }: { route: Route; role: Role }) {
  switch (route.page) {
    case 'board':
      return <Board />;
    case 'task':
      return <TaskPage key={route.taskId} taskId={route.taskId} />;
    case 'cleanup-jobs':
      return role === 'operator' ? <CleanupJobs /> : <OperatorOnly />;
    case 'hosts':
      return role === 'operator' ? <Hosts /> : <OperatorOnly />;
    case 'unknown':
      return (
        <p class="notice">
          There is no page at {route.hash}. <a href="#/">Go to the board</a>.
        </p>
      );
  }
}

const OperatorOnly = () => <p class="notice">This page is for the operator token: sign in with it to see it.</p>;
