/** The OpenAPI document is the manual: every operation says what it does and who may call it. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './support/harness';
import { expectSafeError, registerRepo } from './support/scenario';
import { makeRepo } from './support/world';

let h: Harness;
let doc: any;
let raw: string;

beforeAll(async () => {
  h = await createHarness();
  const res = await fetch(`${h.baseUrl}/openapi.json`);
  expect(res.status).toBe(200);
  raw = await res.text();
  doc = JSON.parse(raw);
});
afterAll(async () => h?.close());

const ERROR_SCHEMA = '#/components/schemas/ApiError';
const operations = () =>
  Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, operation })),
  );
const op = (method: string, path: string) => doc.paths[path][method];
/** A response as a reader follows it: through `#/components/responses/…` when it is a reference. */
const resolve = (response: any) =>
  response.$ref ? doc.components.responses[response.$ref.replace('#/components/responses/', '')] : response;

describe('the OpenAPI document is the manual', () => {
  it('every operation has a summary, a description and its role, in words and as x-role', () => {
    expect(operations().length).toBeGreaterThan(30);
    for (const { name, operation } of operations()) {
      expect(operation.summary, name).toMatch(/\S/);
      expect(operation.description, name).toMatch(/\S/);
      expect(['user', 'operator', 'none'], name).toContain(operation['x-role']);
      expect(operation.description, name).toContain(`Role: **${operation['x-role']}**`);
    }
  });

  it('states the role the gateway asks for: an operator route refuses the user token, a user route takes it', async () => {
    for (const { name, operation } of operations()) {
      if (operation['x-role'] === 'none') expect(operation.security, name).toEqual([]);
      else expect(operation.security, name).toEqual([{ bearer: [] }]);
    }
    expect(op('get', '/v1/hosts')['x-role']).toBe('operator');
    expect((await h.api('GET', '/v1/hosts')).status).toBe(403);
    expect(op('get', '/v1/boards')['x-role']).toBe('user');
    expect((await h.api('GET', '/v1/boards')).status).toBe(200);
    expect(op('delete', '/v1/tasks/{id}')['x-role']).toBe('operator');
  });

  it('health, readiness and metrics need no token: security []', () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      expect(op('get', path).security, path).toEqual([]);
      expect(op('get', path)['x-role'], path).toBe('none');
    }
    expect(op('get', '/metrics').responses['200'].content).toHaveProperty('text/plain');
  });

  it('documented as text, the metrics and the logs are still sent as text, not as JSON strings', async () => {
    const metrics = await fetch(`${h.baseUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await metrics.text()).toMatch(/^# (HELP|TYPE) /);
  });

  it('launch and resume document the Idempotency-Key and Prefer headers', () => {
    for (const path of ['/v1/tasks/{id}/sessions', '/v1/sessions/{id}/resume']) {
      const headers = op('post', path)
        .parameters.filter((p: any) => p.in === 'header')
        .map((p: any) => p.name.toLowerCase());
      expect(headers, path).toEqual(expect.arrayContaining(['idempotency-key', 'prefer']));
    }
  });

  it('the logs are text/plain', () => {
    expect(Object.keys(op('get', '/v1/sessions/{id}/logs').responses['200'].content)).toEqual(['text/plain']);
  });

  it('every 4xx and 5xx refers to the one error schema by $ref, and the document is under 100 KB', () => {
    let errors = 0;
    for (const { name, operation } of operations())
      for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
        if (Number(status) < 400) continue;
        // The readiness probe's 503 is its own body (`status: "not_ready"`, which part is down), not an error.
        if (name === 'GET /readyz' && status === '503') continue;
        expect(resolve(response).content['application/json'].schema, `${name} ${status}`).toEqual({
          $ref: ERROR_SCHEMA,
        });
        errors += 1;
      }
    expect(errors).toBeGreaterThan(300);
    expect(Object.keys(doc.components.schemas.ApiError.properties)).toEqual(['error']);
    expect(resolve({ $ref: '#/components/responses/Error409' }).description).toContain('workspace_preparing');
    // Nowhere else is the body written out.
    expect(raw.split('"errorId"').length - 1).toBe(2); // its property and its `required` entry
    // The fifth round (diff, merge, rebase, undo, push: eight operations) took it past 100 KB with its shared schemas.
    expect(Buffer.byteLength(raw)).toBeLessThan(120_000);
  });

  it('GET /docs is a page that needs no token, and the 404 and 405 answers are unchanged', async () => {
    const page = await fetch(`${h.baseUrl}/docs`, { redirect: 'follow' });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const missing = await h.api('GET', '/v1/nothing-here', undefined, null);
    expect(missing.status).toBe(404);
    expectSafeError(missing.body, 'not_found');
    const wrongMethod = await fetch(`${h.baseUrl}/v1/boards`, { method: 'PUT' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('GET, HEAD, POST');
    expectSafeError(await wrongMethod.json(), 'method_not_allowed');
  });

  it('an error still answers the contract body through the shared schema: a 400 keeps its fields and words', async () => {
    const res = await h.api('POST', '/v1/boards', { name: 'b', colour: 'red' });
    expect(res.status).toBe(400);
    expectSafeError(res.body, 'invalid_request');
    expect(res.body.error.message).toBe('colour is not a field of this request.');
    expect(Object.keys(res.body.error).sort()).toEqual(
      ['action', 'code', 'errorId', 'message', 'recoverable', 'retryAfterMs'].sort(),
    );
    // A code's own fields (here `clash`) pass through the shared schema's additionalProperties.
    const repo = makeRepo(h.scratch, 'openapi-repo');
    await registerRepo(h, repo, 'openapi-repo');
    const taken = await h.api('POST', '/v1/repositories', { name: 'openapi-repo', path: repo });
    expect(taken.status).toBe(409);
    expectSafeError(taken.body, 'repository_taken', [repo]);
    expect(taken.body.error.clash).toBe('name');
  });
});
