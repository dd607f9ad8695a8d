/** The benchmark's HTTP client: the public API as a user calls it, timed from request to parsed body. */
import { elapsedMs } from './stats';

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  ms: number;
}

export interface ErrorBody {
  error?: { code?: string; message?: string };
}

export interface LaunchBody {
  sessionId: string;
  taskEnvironmentId: string;
  role: 'materialized' | 'attached' | 'transitioned';
  state: string;
  executionId: string;
}

export const AGENT_COMMAND = ['sleep', '600'];

export class Api {
  constructor(
    readonly baseUrl: string,
    private readonly token: string,
    /** The host its repositories are registered on (none: the only live one, as the API's default). */
    private readonly hostId?: string,
  ) {}

  async call<T = any>(
    method: string,
    url: string,
    body?: unknown,
    extraHeaders: Record<string, string> = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...extraHeaders, authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const start = performance.now();
    const res = await fetch(this.baseUrl + url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const ms = elapsedMs(start);
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed as T, ms };
  }

  /** Every item of a list route, page by page (`{ items, nextCursor }`, 200 a page). */
  async listAll<T>(url: string): Promise<T[]> {
    const items: T[] = [];
    for (let cursor: string | null = null, first = true; first || cursor !== null; first = false) {
      const sep = url.includes('?') ? '&' : '?';
      const res: ApiResponse<{ items?: T[]; nextCursor?: string | null }> = await this.call(
        'GET',
        `${url}${sep}limit=200${cursor ? `&cursor=${cursor}` : ''}`,
      );
      if (res.status !== 200 || !Array.isArray(res.body.items))
        throw new Error(`listing ${url}: ${res.status} ${JSON.stringify(res.body)}`);
      items.push(...res.body.items);
      cursor = res.body.nextCursor ?? null;
    }
    return items;
  }

  async registerRepository(name: string, repoPath: string): Promise<string> {
    const res = await this.call<{ id: string }>('POST', '/v1/repositories', {
      name,
      path: repoPath,
      ...(this.hostId ? { hostId: this.hostId } : {}),
    });
    if (res.status !== 201) throw new Error(`registering ${name}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id;
  }

  async createTask(title: string, repositoryIds: string[], boardId?: string): Promise<string> {
    const res = await this.call<{ id: string }>('POST', '/v1/tasks', {
      title,
      ...(boardId ? { boardId } : {}),
      repositories: repositoryIds.map((repositoryId) => ({ repositoryId })),
    });
    if (res.status !== 201) throw new Error(`creating a task: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id;
  }

  async createBoard(name: string): Promise<string> {
    const res = await this.call<{ id: string }>('POST', '/v1/boards', { name });
    if (res.status !== 201) throw new Error(`creating a board: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.id;
  }

  /** POST /v1/tasks/:id/sessions with the shell profile running `sleep 600`; 201 when the agent runs. */
  launch(taskId: string): Promise<ApiResponse<LaunchBody & ErrorBody>> {
    return this.call('POST', `/v1/tasks/${taskId}/sessions`, {
      executorType: 'worktree',
      agentProfile: 'shell',
      command: AGENT_COMMAND,
    });
  }

  /** A launch that must succeed (set-up steps, not measurements). */
  async launchOk(taskId: string, role?: LaunchBody['role']): Promise<LaunchBody> {
    const res = await this.launch(taskId);
    if (res.status !== 201 || (role && res.body.role !== role))
      throw new Error(`launch on ${taskId}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }
}

export function errorCode(res: ApiResponse<unknown>): string {
  const body = res.body as ErrorBody | null;
  return (typeof body === 'object' && body?.error?.code) || `http_${res.status}`;
}
