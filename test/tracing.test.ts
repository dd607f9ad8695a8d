/**
 * Tracing: with OTEL_EXPORTER_OTLP_ENDPOINT set, the gateway and the worker (real
 * processes, the compiled code `make start` runs) send one trace per request over OTLP/HTTP
 * (JSON) to a real receiver here: the HTTP request, the workflow start, the workflow, its steps
 * and each git command under them, linked parent to child, with the task, session and operation
 * ids as attributes and never a path or a branch name. Unset, no part of OpenTelemetry's SDK is
 * even loaded. A traced run replays like any other, and an ssh command is a span too.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { Worker } from '@temporalio/worker';
import pino from 'pino';
import { describe, expect, inject, it } from 'vitest';
import { withIds } from '../domain/trace-ids';
import { cleanupWorkflowId, launchWorkflowId } from '../domain/workflow-ids';
import { gitCommandName } from '../git/command-span';
import { closeSshConnections } from '../ssh/connection';
import { spanExportFailures } from '../worker/span-export-failures';
import { namedScript, runRemote } from '../ssh/remote-exec';
import { waitForJob } from './support/cleanup';
import { harnessesPerTest, USER_TOKEN, type Harness } from './support/harness';
import { createTask, registerRepo, SLEEPER, waitUntil } from './support/scenario';
import { startSshServer } from './support/ssh-server';
import { makeRepo } from './support/world';

const { harness, cleanups } = harnessesPerTest();

interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
}

/** An OTLP/HTTP receiver: POST /v1/traces with JSON bodies, each span kept with its service's name. */
async function startReceiver() {
  const spans: ReceivedSpan[] = [];
  const contentTypes = new Set<string>();
  const value = (v: Record<string, unknown>) => v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue;
  const attributes = (list: { key: string; value: Record<string, unknown> }[] = []) =>
    Object.fromEntries(list.map((a) => [a.key, value(a.value)]));
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
      contentTypes.add(String(req.headers['content-type']));
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans?: any[] };
      for (const resourceSpans of body.resourceSpans ?? []) {
        const service = String(attributes(resourceSpans.resource?.attributes)['service.name']);
        for (const scope of resourceSpans.scopeSpans ?? [])
          for (const s of scope.spans ?? [])
            spans.push({
              service,
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              name: s.name,
              attributes: attributes(s.attributes),
            });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, contentTypes };
}

/** The spans of one trace, once `complete` holds of them. */
async function traceOf(
  spans: ReceivedSpan[],
  traceId: () => string | undefined,
  complete: (trace: ReceivedSpan[]) => boolean,
  what: string,
): Promise<ReceivedSpan[]> {
  let found: ReceivedSpan[] = [];
  await waitUntil(
    async () => {
      const id = traceId();
      found = id ? spans.filter((s) => s.traceId === id) : [];
      return found.length > 0 && complete(found);
    },
    `${what}; received: ${JSON.stringify(found.map((s) => s.name))}`,
    30_000,
  );
  return found;
}

const named = (trace: ReceivedSpan[], name: string): ReceivedSpan => {
  const span = trace.find((s) => s.name === name);
  expect(span, `a ${name} span in ${JSON.stringify(trace.map((s) => s.name))}`).toBeDefined();
  return span!;
};

/** The names from a span up to the root of its trace. */
function lineage(trace: ReceivedSpan[], span: ReceivedSpan): string[] {
  const byId = new Map(trace.map((s) => [s.spanId, s]));
  const names: string[] = [];
  for (let at: ReceivedSpan | undefined = span; at; at = byId.get(at.parentSpanId)) names.push(at.name);
  return names;
}

/** One tree: a single trace id, and every span's parent in it but the root's. */
function expectTree(trace: ReceivedSpan[], root: ReceivedSpan): void {
  const ids = new Set(trace.map((s) => s.spanId));
  expect(new Set(trace.map((s) => s.traceId))).toEqual(new Set([root.traceId]));
  expect(ids.size, 'span ids are unique').toBe(trace.length);
  expect(trace.filter((s) => s !== root && !ids.has(s.parentSpanId)).map((s) => s.name)).toEqual([]);
}

/** Nothing that locates the user's files in a span: no path under the test's folder, no branch name. */
function expectNoPaths(trace: ReceivedSpan[], h: Harness): void {
  const text = JSON.stringify(trace);
  expect(text).not.toContain(h.scratch);
  expect(text).not.toMatch(/refs\/heads|tws\/[0-9a-f-]{8}/);
}

function waitForExit(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
  });
}

const launchBody = { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER };

describe('tracing on: one linked trace per request, exported over OTLP/HTTP', () => {
  it('a launch and an archive: HTTP request → workflow start → workflow → steps → git commands, with their ids', async () => {
    const receiver = await startReceiver();
    const h = await harness({}, { inProcessWorker: false });
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      TWS_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    };
    h.spawnWorker(env);
    const gateway = await h.spawnGateway(env);
    const repo = makeRepo(h.scratch, 'traced');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'traced')]);

    // The launch: the gateway runs it (eager start), so its whole trace comes from the gateway.
    const launched = await gateway.api('POST', `/v1/tasks/${taskId}/sessions`, launchBody);
    expect(launched.status, JSON.stringify(launched.body)).toBe(201);
    const sessionId: string = launched.body.sessionId;
    const isLaunchRequest = (s: ReceivedSpan) =>
      s.name === 'POST /v1/tasks/:id/sessions' && s.attributes['tws.task_id'] === taskId;
    const launch = await traceOf(
      receiver.spans,
      () => receiver.spans.find(isLaunchRequest)?.traceId,
      (t) => ['RunWorkflow:launchSession', 'git worktree add'].every((n) => t.some((s) => s.name === n)),
      'the launch trace',
    );
    const request = launch.find(isLaunchRequest)!;
    expect(request.parentSpanId).toBe('');
    expect(request.service).toBe('tws-gateway');
    expect(request.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/tasks/:id/sessions',
      'http.response.status_code': 201,
    });
    expectTree(launch, request);
    const run = named(launch, 'RunWorkflow:launchSession');
    expect(lineage(launch, run)).toEqual([
      'RunWorkflow:launchSession',
      'StartWorkflow:launchSession',
      'POST /v1/tasks/:id/sessions',
    ]);
    expect(run.attributes).toMatchObject({
      'tws.task_id': taskId,
      'tws.session_id': sessionId,
      workflowId: launchWorkflowId(sessionId),
    });
    // Which run it is, and not the rest of its WorkflowInfo (memo, search attributes, failures).
    expect(
      Object.keys(run.attributes)
        .filter((key) => !key.startsWith('tws.'))
        .sort(),
    ).toEqual(['attempt', 'namespace', 'runId', 'taskQueue', 'workflowId', 'workflowType']);
    const worktreeAdd = named(launch, 'git worktree add');
    expect(lineage(launch, worktreeAdd)).toEqual([
      'git worktree add',
      'RunActivity:materializeAndLaunch',
      'StartActivity:materializeAndLaunch',
      'RunWorkflow:launchSession',
      'StartWorkflow:launchSession',
      'POST /v1/tasks/:id/sessions',
    ]);
    for (const span of [named(launch, 'RunActivity:materializeAndLaunch'), worktreeAdd])
      expect(span.attributes, span.name).toMatchObject({ 'tws.task_id': taskId, 'tws.session_id': sessionId });
    expect(worktreeAdd.attributes['process.exit.code']).toBe(0);
    // Every git command of the launch under one of its steps, named by the command alone.
    for (const git of launch.filter((s) => s.name.startsWith('git ')))
      expect(lineage(launch, git)[1], git.name).toMatch(/^RunActivity:/);
    expect(launch.every((s) => s.service === 'tws-gateway')).toBe(true);
    expectNoPaths(launch, h);

    // The archive, as a child of the caller's own trace (W3C traceparent): the gateway starts the
    // cleanup, the worker process runs it and removes the worktree.
    const callerTrace = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const answer = await fetch(`${gateway.url}/v1/tasks/${taskId}/archive`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${USER_TOKEN}`,
        'content-type': 'application/json',
        traceparent: `00-${callerTrace}-${callerSpan}-01`,
        // A caller's baggage is not taken for the trace's ids.
        baggage: 'tws.task_id=not-this-task',
      },
      body: '{}',
    });
    expect(answer.status).toBe(202);
    const { operationId } = (await answer.json()) as { operationId: string };
    await waitForJob(h, operationId);
    const archive = await traceOf(
      receiver.spans,
      () => callerTrace,
      (t) => ['RunWorkflow:cleanupTask', 'git worktree remove'].every((n) => t.some((s) => s.name === n)),
      'the archive trace',
    );
    const archiveRequest = named(archive, 'POST /v1/tasks/:id/archive');
    expect(archiveRequest.parentSpanId).toBe(callerSpan);
    expect(archiveRequest.attributes).toMatchObject({ 'tws.task_id': taskId, 'http.response.status_code': 202 });
    expectTree(archive, archiveRequest);
    const cleanup = named(archive, 'RunWorkflow:cleanupTask');
    expect(cleanup.service).toBe('tws-worker');
    expect(cleanup.attributes).toMatchObject({
      'tws.task_id': taskId,
      'tws.operation_id': operationId,
      workflowId: cleanupWorkflowId('archive', taskId, operationId),
    });
    const worktreeRemove = named(archive, 'git worktree remove');
    expect(worktreeRemove.service).toBe('tws-worker');
    expect(worktreeRemove.attributes).toMatchObject({ 'tws.task_id': taskId, 'tws.operation_id': operationId });
    const removal = lineage(archive, worktreeRemove);
    expect(removal[1], removal.join(' ← ')).toMatch(/^RunActivity:/);
    expect(removal.slice(removal.indexOf('RunWorkflow:cleanupTask') + 1)).toEqual([
      expect.stringMatching(/^UpdateWithStartWorkflow:/),
      'POST /v1/tasks/:id/archive',
    ]);
    expect(named(archive, removal[1]!).attributes).toMatchObject({
      'tws.task_id': taskId,
      'tws.operation_id': operationId,
    });
    expectNoPaths(archive, h);
    expect([...receiver.contentTypes]).toEqual(['application/json']);

    // A traced run replays: its history holds the trace header, so the interceptors wake alike.
    for (const workflowId of [launchWorkflowId(sessionId), cleanupWorkflowId('archive', taskId, operationId)])
      await Worker.runReplayHistory(
        {
          workflowBundle: { codePath: inject('workflowBundlePath') },
          sinks: { exporter: { export: { fn: () => {} } } },
        },
        await h.temporal.workflow.getHandle(workflowId).fetchHistory(),
        workflowId,
      );
  });
});

describe('span exports that fail are counted and said', () => {
  it("a collector that is down: the gateway's dropped spans show in /metrics, by service", async () => {
    // A port nothing listens on: every export is refused.
    const down = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const port = (probe.address() as AddressInfo).port;
        probe.close(() => resolve(port));
      });
    });
    const h = await harness({}, { inProcessWorker: false });
    const gateway = await h.spawnGateway({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${down}`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    const failed = async () => {
      const text = (await gateway.api('GET', '/metrics', undefined, USER_TOKEN)).body as string;
      const line = String(text)
        .split('\n')
        .find((l) => l.startsWith('tws_span_exports_failed_total{service="tws-gateway"}'));
      return line ? Number(line.split(' ').pop()) : 0;
    };
    // Requests make spans (one each); their batches fail.
    for (let i = 0; i < 3; i++) expect((await gateway.api('GET', '/v1/tasks')).status).toBe(200);
    await waitUntil(async () => (await failed()) >= 1, 'a failed export counted', 30_000, failed);
    const rows = await h.pool.query(
      "SELECT labels, value FROM metric_counters WHERE name = 'tws_span_exports_failed_total'",
    );
    expect(rows.rows).toEqual([{ labels: '{"service":"tws-gateway"}', value: expect.anything() }]);
    expect(Number(rows.rows[0].value)).toBeGreaterThanOrEqual(1);
  });

  it('says a failing export at most once a minute, with how many failed since, and what the database did not count', async () => {
    const h = await harness({}, { inProcessWorker: false });
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const report = spanExportFailures('tws-worker', { pool: h.pool, logger }, 60_000);
    for (let i = 0; i < 5; i++) report(4, new Error('connect ECONNREFUSED'));
    const counted = async () =>
      Number(
        (await h.pool.query("SELECT value FROM metric_counters WHERE name = 'tws_span_exports_failed_total'")).rows[0]
          ?.value ?? 0,
      );
    await waitUntil(async () => (await counted()) === 20, 'the five batches counted', 10_000, counted);
    await waitUntil(async () => lines.length > 0, 'the first failure said');
    // Every count is in, and one line said them all (the five failed before the first count
    // came back); the next line is due in a minute, whatever fails meanwhile.
    report(4, new Error('connect ECONNREFUSED'));
    await waitUntil(async () => (await counted()) === 24, 'the sixth batch counted', 10_000, counted);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ service: 'tws-worker', failedBatches: 5, failedSpans: 20, notCounted: 0 });
    expect(String(lines[0]!.msg)).toMatch(/^span export failed/);
  });
});

describe('tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  it('the gateway and the worker run a launch without loading any of the OpenTelemetry SDK', async () => {
    const h = await harness({}, { inProcessWorker: false });
    const loadedFile = path.join(h.scratch, 'loaded.jsonl');
    const preload = path.join(h.scratch, 'record-loaded.cjs');
    writeFileSync(
      preload,
      `process.on('exit', () => require('node:fs').appendFileSync(${JSON.stringify(loadedFile)}, JSON.stringify({ argv: process.argv, loaded: Object.keys(require.cache) }) + '\\n'));\n`,
    );
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
      NODE_OPTIONS: `--require ${preload}`,
      TWS_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    };
    const worker = h.spawnWorker(env);
    const gateway = await h.spawnGateway(env);
    const repo = makeRepo(h.scratch, 'untraced');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'untraced')]);
    const launched = await gateway.api('POST', `/v1/tasks/${taskId}/sessions`, launchBody);
    expect(launched.status, JSON.stringify(launched.body)).toBe(201);
    // The worker is polling by now (the host's registration says so once it can).
    await waitUntil(
      async () => (await h.pool.query('SELECT 1 FROM hosts WHERE host_id = $1', [h.config.hostId])).rowCount === 1,
      'the worker to register its host',
    );
    for (const child of [gateway.child, worker]) {
      child.kill('SIGTERM');
      await waitForExit(child);
    }

    const processes = readFileSync(loadedFile, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { argv: string[]; loaded: string[] });
    const services = processes.filter((p) =>
      /\.build\/(worker\/main|client\/gateway\/main)\.js$/.test(p.argv[1] ?? ''),
    );
    expect(services.map((p) => path.basename(path.dirname(p.argv[1]!)))).toEqual(
      expect.arrayContaining(['worker', 'gateway']),
    );
    for (const p of services) {
      const otel = p.loaded.filter((file) =>
        /node_modules\/@(opentelemetry|temporalio\/interceptors-opentelemetry)\//.test(file),
      );
      // The API's no-op is all there is (the git and ssh spans call into it).
      expect(
        otel.some((file) => file.includes('node_modules/@opentelemetry/api/')),
        p.argv[1],
      ).toBe(true);
      expect(
        otel.filter((file) => !file.includes('node_modules/@opentelemetry/api/')),
        p.argv[1],
      ).toEqual([]);
    }
  });
});

describe('span names and attributes say the command, never its arguments', () => {
  it('git: the command and, for worktree, stash and bundle, its verb; never a path, branch or option value', () => {
    expect(gitCommandName(['worktree', 'add', '--no-track', '-b', 'tws/t/work', '/tmp/x', 'refs/heads/main'])).toBe(
      'git worktree add',
    );
    expect(gitCommandName(['worktree', 'remove', '--force', '/tmp/x'])).toBe('git worktree remove');
    expect(gitCommandName(['--git-dir', '/srv/repo.git', 'index-pack', '--stdin'])).toBe('git index-pack');
    expect(gitCommandName(['-C', '/srv/repo', '-c', 'core.x=y', 'rev-parse', 'HEAD'])).toBe('git rev-parse');
    expect(gitCommandName(['stash', 'create', 'a message'])).toBe('git stash create');
    expect(gitCommandName(['update-ref', '-d', 'refs/heads/tws/x'])).toBe('git update-ref');
    expect(gitCommandName(['--git-dir', '/only/options'])).toBe('git');
    expect(gitCommandName(['/not/a/command'])).toBe('git');
  });

  it("ssh: `ssh <script's name>` with the target's id and the step's ids, never its host, port, user or arguments", async () => {
    const server = await startSshServer();
    const exporter = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    provider.register();
    cleanups.push(async () => {
      await closeSshConnections();
      await server.remove();
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    });
    const target = {
      id: 'target-traced',
      host: server.host,
      port: server.port,
      user: server.user,
      privateKeyPath: server.privateKeyPath,
      knownHosts: server.knownHostsLine,
      workspaceRoot: server.workspaceRoot,
    };
    const echo = namedScript('echo argument', 'printf "%s" "$1"');
    const ids = { taskId: 'task-1', sessionId: 'session-1', operationId: 'operation-1' };
    const secret = path.join(server.workspaceRoot, 'secret-path');
    const result = await context.with(withIds(context.active(), ids), () => runRemote(target, echo, [secret]));
    expect(result.stdout.toString()).toBe(secret);

    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe('ssh echo argument');
    expect(span?.attributes).toEqual({
      'tws.ssh_target_id': 'target-traced',
      'tws.task_id': 'task-1',
      'tws.session_id': 'session-1',
      'tws.operation_id': 'operation-1',
      'process.exit.code': 0,
    });
    const text = JSON.stringify({ name: span?.name, attributes: span?.attributes, status: span?.status });
    for (const hidden of [secret, server.user, String(server.port), server.privateKeyPath])
      expect(text).not.toContain(hidden);
  });
});
