/**
 * The one way the console talks to the service: the public API, with the token in the
 * Authorization header. Every failure becomes an ApiFailure with words a person can act on: the
 * API's own error body (its message and `action`), or what a lost connection means.
 */
export interface ErrorBody {
  code: string;
  message: string;
  action: string;
  recoverable?: boolean;
  [extra: string]: unknown;
}

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(body.message);
  }
}

/** What each `action` asks of a person, in words. */
const ACTION_TEXT: Record<string, string> = {
  retry: 'Try again in a moment.',
  reset_environment: "Reset the task's environment, then try again.",
  choose_executor: 'Choose another executor.',
  unarchive: 'Unarchive the task first.',
  discard_or_commit: 'Commit the work, or confirm that it may be discarded.',
  commit_or_consent: 'Commit the work, or confirm that it may be committed or discarded.',
  stop_session: 'Stop the running session first.',
  fix_request: 'Change what was asked and send it again.',
  authenticate: 'Sign in again with a valid token.',
  report: 'Tell an operator, with the error id.',
  wait: 'Wait until it has finished, then try again.',
  free_space: 'Free disk space on the host, then try again.',
  operator: 'An operator has to act: tell one.',
  rebase_or_resolve: 'Rebase the task onto its base, or resolve the conflicts, then try again.',
  revert: 'The base moved since: revert the merge by a new commit instead.',
  none: 'Nothing to do.',
};

export const actionText = (action: string): string => ACTION_TEXT[action] ?? `What to do: ${action}.`;

/** A connection that could not be made: not the API's answer, so said by the console. */
const connectionLost = (): ApiFailure =>
  new ApiFailure(0, {
    code: 'connection_lost',
    message: 'The service could not be reached.',
    action: 'retry',
  });

export interface Api {
  get<T>(path: string): Promise<T>;
  send<T>(
    method: 'POST' | 'DELETE' | 'PATCH',
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<T>;
  /** The raw response of a streaming read (logs, events); failures as ApiFailure. */
  stream(path: string, headers: Record<string, string>, signal: AbortSignal): Promise<Response>;
  readonly token: string;
}

async function failureOf(response: Response): Promise<ApiFailure> {
  try {
    const body = (await response.json()) as { error?: ErrorBody };
    if (body.error && typeof body.error.message === 'string') return new ApiFailure(response.status, body.error);
  } catch {
    // not the API's JSON (a proxy's page): said below
  }
  return new ApiFailure(response.status, {
    code: `http_${response.status}`,
    message: `The service answered ${response.status} ${response.statusText}.`,
    action: response.status >= 500 ? 'retry' : 'report',
  });
}

export function createApi(token: string): Api {
  async function call(
    method: string,
    path: string,
    body?: unknown,
    extra: Record<string, string> = {},
    signal?: AbortSignal,
  ) {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, ...extra };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      throw connectionLost();
    }
    if (!response.ok) throw await failureOf(response);
    return response;
  }
  return {
    token,
    async get<T>(path: string) {
      return (await (await call('GET', path)).json()) as T;
    },
    async send<T>(method: 'POST' | 'DELETE' | 'PATCH', path: string, body?: unknown, headers?: Record<string, string>) {
      const response = await call(method, path, body, headers);
      const text = await response.text();
      return (text === '' ? undefined : JSON.parse(text)) as T;
    },
    stream: (path, headers, signal) => call('GET', path, undefined, headers, signal),
  };
}

/** Every page of a list (`{ items, nextCursor }`), 200 at a time. */
export async function allPages<T>(api: Api, path: string, maxItems = 5000): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = null;
  const join = path.includes('?') ? '&' : '?';
  do {
    const url = `${path}${join}limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const page: { items: T[]; nextCursor: string | null } = await api.get(url);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && items.length < maxItems);
  return items;
}
