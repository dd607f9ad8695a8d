/**
 * Sign-in with a token. The role is learnt by asking an operator-only list (GET /v1/hosts): 200
 * is the operator token, 403 the user token, 401 no token of this service.
 */
import { useState } from 'preact/hooks';
import { ApiFailure, createApi } from '../api';
import { MaybeError } from '../parts/error-view';
import type { Role } from '../session-context';

export async function roleOf(token: string): Promise<Role> {
  try {
    await createApi(token).get('/v1/hosts?limit=1');
    return 'operator';
  } catch (err) {
    if (err instanceof ApiFailure && err.status === 403) return 'user';
    throw err;
  }
}

export function SignIn({ onSignedIn }: { onSignedIn: (token: string, role: Role) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<ApiFailure | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: Event) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSignedIn(token.trim(), await roleOf(token.trim()));
    } catch (err) {
      setError(err as ApiFailure);
    } finally {
      setBusy(false);
    }
  }

  return (
    <main class="sign-in">
      <h1>task-workspaces</h1>
      <form onSubmit={(event) => void submit(event)}>
        <label>
          Token
          <input
            type="password"
            autocomplete="off"
            data-testid="token"
            value={token}
            onInput={(event) => setToken(event.currentTarget.value)}
          />
        </label>
        <button type="submit" data-testid="sign-in" disabled={busy || token.trim() === ''}>
          Sign in
        </button>
      </form>
      <p class="hint">
        The user token is <code>userToken</code> in <code>.data/secrets.json</code> (the operator token,{' '}
        <code>operatorToken</code>, also shows the operator pages). It is kept for this browser tab only.
      </p>
      <MaybeError error={error} />
    </main>
  );
}
