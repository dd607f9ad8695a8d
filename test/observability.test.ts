/**
 * The shipped dashboard and alert rules query only what is served: every metric
 * name their PromQL selects has series on the gateway's /metrics (ours, then the gateway
 * process's Temporal SDK metrics) or on the worker's SDK endpoint, once a launch, a refusal and an
 * archive have run on a real system.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { archive, waitForJob } from './support/cleanup';
import { freePort, harnessesPerTest } from './support/harness';
import { metricNamesOf, missingNames, parseExposition } from './support/promql';
import { createTask, expectSafeError, registerRepo, SLEEPER, waitUntil } from './support/scenario';
import { makeRepo } from './support/world';

const { harness } = harnessesPerTest();
const root = path.resolve(__dirname, '..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: { expr: string; datasource?: { uid: string } }[];
  panels?: Panel[];
  gridPos: { x: number; y: number; w: number; h: number };
}
const dashboard = JSON.parse(read('deploy/grafana/task-workspaces.json')) as {
  title: string;
  uid: string;
  schemaVersion: number;
  templating: { list: { name: string; type: string; query: string }[] };
  panels: Panel[];
};
const allPanels = (panels: Panel[]): Panel[] => panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
const graphed = allPanels(dashboard.panels).filter((p) => p.type !== 'row');

interface Rule {
  alert: string;
  expr: string;
  for: string;
  labels: { severity: string };
  annotations: { summary: string; description?: string };
}
const alerting = parse(read('deploy/prometheus/alerts.yml')) as { groups: { name: string; rules: Rule[] }[] };
const rules = alerting.groups.flatMap((g) => g.rules);

/** Every expression each file queries, by where it is. */
const queries: [string, string][] = [
  ...graphed.flatMap((p) => (p.targets ?? []).map((t) => [`panel "${p.title}"`, t.expr] as [string, string])),
  ...rules.map((r) => [`alert ${r.alert}`, r.expr] as [string, string]),
];
const referenced = [...new Set(queries.flatMap(([, expr]) => metricNamesOf(expr)))].sort();

describe('the PromQL reader', () => {
  it('finds the metrics of an expression and nothing else: no function, aggregation, label, string, range, keyword or variable', () => {
    expect(
      metricNamesOf(
        'histogram_quantile(0.95, sum by (le, kind) (rate(tws_launch_duration_seconds_bucket{outcome="started", kind=~"launch|resume"}[$__rate_interval]))) > on (job) group_left (instance) max without (host) (up_info offset 5m) * 1e3',
      ),
    ).toEqual(['tws_launch_duration_seconds_bucket', 'up_info']);
    expect(metricNamesOf('max by (host) (tws_host_disk_free_bytes / tws_host_disk_total_bytes) < 0.15')).toEqual([
      'tws_host_disk_free_bytes',
      'tws_host_disk_total_bytes',
    ]);
    expect(metricNamesOf('sum(rate(x_total[5m])) by (code) and bool y or vector(1)')).toEqual(['x_total', 'y']);
  });

  it('reports a made-up name as missing, and a histogram by the series it serves', () => {
    const exposition = parseExposition(
      [
        '# HELP tws_launch_duration_seconds Launches',
        '# TYPE tws_launch_duration_seconds histogram',
        'tws_launch_duration_seconds_bucket{le="0.1",kind="launch"} 1',
        'tws_launch_duration_seconds_bucket{le="+Inf",kind="launch"} 1',
        'tws_launch_duration_seconds_sum{kind="launch"} 0.05',
        'tws_launch_duration_seconds_count{kind="launch"} 1',
        '# TYPE temporal_request counter',
        'temporal_request{operation="GetSystemInfo"} 3',
        '# a comment',
        '',
      ].join('\n'),
    );
    expect(exposition.undeclared).toEqual([]);
    expect(exposition.declaredTwice).toEqual([]);
    expect(
      missingNames(
        [
          'tws_launch_duration_seconds_bucket',
          'tws_launch_duration_seconds_count',
          'temporal_request',
          'tws_made_up_metric_total',
          'tws_launch_duration_seconds',
        ],
        [exposition],
      ),
    ).toEqual(['tws_launch_duration_seconds', 'tws_made_up_metric_total']);
    expect(parseExposition('# TYPE a gauge\na 1\nb_bucket{le="1"} 2\n').undeclared).toEqual(['b_bucket']);
  });
});

describe('the shipped files', () => {
  it('deploy/prometheus/alerts.yml: groups of rules, each with an alert, an expression, a duration, a severity and a summary', () => {
    expect(alerting.groups.length).toBeGreaterThan(0);
    for (const group of alerting.groups) {
      expect(typeof group.name).toBe('string');
      expect(group.rules.length, group.name).toBeGreaterThan(0);
    }
    for (const rule of rules) {
      expect(rule.alert, JSON.stringify(rule)).toMatch(/^[A-Z][A-Za-z]+$/);
      expect(typeof rule.expr, rule.alert).toBe('string');
      expect(metricNamesOf(rule.expr).length, rule.alert).toBeGreaterThan(0);
      expect(rule.for, rule.alert).toMatch(/^\d+[smhd]$/);
      expect(['warning', 'critical'], rule.alert).toContain(rule.labels?.severity);
      expect(typeof rule.annotations?.summary, rule.alert).toBe('string');
    }
    expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
    // What an operator must be woken for.
    const alerted = rules.map((r) => metricNamesOf(r.expr)).flat();
    for (const name of [
      'tws_cleanup_jobs',
      'tws_host_up',
      'tws_host_disk_low',
      'tws_refusals_total',
      'temporal_workflow_task_schedule_to_start_latency_bucket',
    ])
      expect(alerted).toContain(name);
    expect(rules.find((r) => r.expr.includes('needs_operator'))?.for).toBe('15m');
  });

  it('deploy/prometheus/prometheus.yml: scrapes the gateway and the worker, and loads the rules beside it', () => {
    const config = parse(read('deploy/prometheus/prometheus.yml')) as {
      rule_files: string[];
      scrape_configs: { job_name: string; metrics_path?: string; static_configs: { targets: string[] }[] }[];
    };
    expect(config.rule_files).toEqual(['alerts.yml']);
    expect(config.scrape_configs.map((s) => s.job_name)).toEqual(['tws-gateway', 'tws-worker']);
    for (const job of config.scrape_configs) {
      expect(job.metrics_path ?? '/metrics').toBe('/metrics');
      expect(job.static_configs.flatMap((s) => s.targets).length).toBeGreaterThan(0);
    }
  });

  it('deploy/grafana/task-workspaces.json: a dashboard over a Prometheus data source variable, each panel on it, in a 24-column grid', () => {
    expect(dashboard.title).toBe('task-workspaces');
    expect(dashboard.uid).toBe('task-workspaces');
    expect(dashboard.schemaVersion).toBeGreaterThan(30);
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' }),
    );
    expect(new Set(allPanels(dashboard.panels).map((p) => p.id)).size).toBe(allPanels(dashboard.panels).length);
    for (const panel of graphed) {
      expect(panel.datasource, panel.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets!) expect(metricNamesOf(target.expr).length, panel.title).toBeGreaterThan(0);
      expect(panel.gridPos.x + panel.gridPos.w, panel.title).toBeLessThanOrEqual(24);
    }
    // The panels an operator needs.
    const shown = new Set(graphed.flatMap((p) => (p.targets ?? []).flatMap((t) => metricNamesOf(t.expr))));
    for (const name of [
      'tws_launch_duration_seconds_bucket',
      'tws_refusals_total',
      'tws_cleanup_jobs',
      'tws_host_agents_running',
      'tws_host_disk_free_bytes',
      'tws_host_workspace_bytes',
      'tws_host_up',
      'temporal_workflow_task_schedule_to_start_latency_bucket',
      'temporal_worker_task_slots_available',
    ])
      expect(shown).toContain(name);
  });
});

describe('every metric the dashboard and the alert rules query is served', () => {
  it('after a launch, a refusal and an archive: ours and the gateway SDK on /metrics, the worker SDK on its own endpoint', async () => {
    // The in-process gateway of the harness is pointed at an SDK endpoint nobody serves.
    const deadSdkPort = await freePort();
    const h = await harness(
      { sdkMetricsAddress: { host: '127.0.0.1', port: deadSdkPort } },
      { inProcessWorker: false },
    );
    const workerSdk = `127.0.0.1:${await freePort()}`;
    let gatewaySdk = workerSdk;
    while (gatewaySdk === workerSdk) gatewaySdk = `127.0.0.1:${await freePort()}`;
    h.spawnWorker({ TWS_SDK_METRICS_ADDRESS: workerSdk });
    const gateway = await h.spawnGateway({ TWS_SDK_METRICS_ADDRESS: gatewaySdk });
    const scrape = async (url: string) => {
      const res = await fetch(url);
      expect(res.status, url).toBe(200);
      return { contentType: res.headers.get('content-type'), text: await res.text() };
    };
    await waitUntil(
      async () => (await fetch(`http://${workerSdk}/metrics`).catch(() => null))?.ok === true,
      'the worker SDK endpoint',
    );
    await waitUntil(
      async () =>
        (await scrape(`${gateway.url}/metrics`)).text.includes(`tws_host_disk_free_bytes{host="${h.config.hostId}"}`),
      "the worker's host record and disk",
    );

    const repo = makeRepo(h.scratch, 'observed');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'observed')]);
    const body = { executorType: 'worktree', agentProfile: 'shell', command: SLEEPER };
    const launched = await gateway.api('POST', `/v1/tasks/${taskId}/sessions`, body);
    expect(launched.status, JSON.stringify(launched.body)).toBe(201);
    const running = parseLine(
      (await scrape(`${gateway.url}/metrics`)).text,
      'tws_host_agents_running',
      h.config.hostId,
    );
    expect(running).toBe(1);

    const job = await archive(h, taskId);
    await waitForJob(h, job.operationId);
    const refused = await gateway.api('POST', `/v1/tasks/${taskId}/sessions`, body);
    expect(refused.status).toBe(409);
    expectSafeError(refused.body, 'task_archived');

    const ours = await scrape(`${gateway.url}/metrics`);
    const worker = await scrape(`http://${workerSdk}/metrics`);
    const gatewayExposition = parseExposition(ours.text);
    const workerExposition = parseExposition(worker.text);

    // One valid exposition: every family declared once, every series under a declared family.
    expect(ours.contentType).toMatch(/^text\/plain/);
    expect(gatewayExposition.declaredTwice).toEqual([]);
    expect(gatewayExposition.undeclared).toEqual([]);
    expect(workerExposition.undeclared).toEqual([]);

    // The dashboard and the rules: nothing they query is missing.
    expect(referenced.length).toBeGreaterThan(15);
    const missing = missingNames(referenced, [gatewayExposition, workerExposition]);
    expect(
      missing.map(
        (name) =>
          `${name} (${queries
            .filter(([, e]) => metricNamesOf(e).includes(name))
            .map(([w]) => w)
            .join(', ')})`,
      ),
    ).toEqual([]);
    // Ours are the gateway's; the SDK's are on both processes' endpoints. An eager launch's
    // workflow task comes back with its start, never through a poll: schedule-to-start is the
    // worker's (its cleanups), slots and requests are both.
    const oursReferenced = referenced.filter((name) => !name.startsWith('temporal_'));
    expect(missingNames(oursReferenced, [gatewayExposition])).toEqual([]);
    expect(missingNames(oursReferenced, [workerExposition])).toEqual(oursReferenced);
    expect(workerExposition.samples).toContain('temporal_workflow_task_schedule_to_start_latency_bucket');
    for (const name of ['temporal_worker_task_slots_available', 'temporal_request']) {
      expect(gatewayExposition.samples, `gateway ${name}`).toContain(name);
      expect(workerExposition.samples, `worker ${name}`).toContain(name);
    }
    // Our registry comes first and whole; the SDK's follow it.
    expect(ours.text.indexOf('# TYPE temporal_')).toBeGreaterThan(ours.text.indexOf('# TYPE tws_refusals_total'));

    // What the launch, the refusal and the archive left in the series.
    expect(
      parseLine(ours.text, 'tws_launch_duration_seconds_count', undefined, 'kind="launch",outcome="started"'),
    ).toBe(1);
    expect(
      parseLine(ours.text, 'tws_launch_duration_seconds_count', undefined, 'kind="launch",outcome="refused"'),
    ).toBe(1);
    expect(
      parseLine(
        ours.text,
        'tws_refusals_total',
        undefined,
        'code="task_archived",status="409",method="POST",route="/v1/tasks/:id/sessions"',
      ),
    ).toBe(1);
    expect(parseLine(ours.text, 'tws_cleanup_jobs', undefined, 'state="needs_operator"')).toBe(0);
    expect(parseLine(ours.text, 'tws_host_up', h.config.hostId)).toBe(1);
    expect(parseLine(ours.text, 'tws_host_heartbeat_age_seconds', h.config.hostId)).toBeLessThan(30);

    // An SDK endpoint that does not answer leaves ours served, with one comment saying so.
    const alone = await scrape(`${h.baseUrl}/metrics`);
    expect(alone.text).toMatch(/\n# The Temporal SDK metrics of this process could not be read \(.+\)\.\n$/);
    expect(parseExposition(alone.text).types.get('tws_refusals_total')).toBe('counter');
    expect([...parseExposition(alone.text).types.keys()].filter((n) => n.startsWith('temporal_'))).toEqual([]);
  });
});

/** The value of one series: by its `host` label, or by its exact label text. */
function parseLine(text: string, name: string, host?: string, labels?: string): number | undefined {
  const prefix = host !== undefined ? `${name}{host="${host}"} ` : `${name}{${labels}} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? undefined : Number(line.slice(prefix.length));
}

describe('who may read /metrics', () => {
  it('only loopback callers by default, even on a gateway listening on every address; anyone with TWS_METRICS_PUBLIC=1', async () => {
    const h = await harness();
    // An address of this machine that is not loopback: a caller from there is not on loopback.
    const outside = Object.values(os.networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    if (!outside) throw new Error('this host has no address but loopback: the test cannot call from outside');
    const scrape = async (gateway: { url: string }, host: string) => {
      const res = await fetch(gateway.url.replace('127.0.0.1', host) + '/metrics');
      return { status: res.status, body: await res.text() };
    };
    const closed = await h.spawnGateway({ TWS_API_HOST: '0.0.0.0' });
    expect((await scrape(closed, '127.0.0.1')).status).toBe(200);
    const refused = await scrape(closed, outside);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body).error.code).toBe('forbidden');
    const open = await h.spawnGateway({ TWS_API_HOST: '0.0.0.0', TWS_METRICS_PUBLIC: '1' });
    const served = await scrape(open, outside);
    expect(served.status).toBe(200);
    expect(served.body).toMatch(/^# HELP /m);
  });
});

describe('what the service writes to its stderr', () => {
  it('an ordinary refusal (a launch of an archived task) writes no stack trace: it is an outcome, not a fault', async () => {
    const h = await harness();
    const stderr = path.join(h.scratch, 'gateway.stderr');
    const gateway = await h.spawnGateway({}, stderr);
    const repo = makeRepo(h.scratch, 'refused');
    const taskId = await createTask(h, [await registerRepo(h, repo, 'refused')]);
    await waitForJob(h, (await archive(h, taskId)).operationId);
    const before = readFileSync(stderr, 'utf8').length;
    for (let i = 0; i < 3; i++) {
      const refused = await gateway.api('POST', `/v1/tasks/${taskId}/sessions`, {
        executorType: 'worktree',
        agentProfile: 'shell',
        command: SLEEPER,
      });
      expect(refused.status, JSON.stringify(refused.body)).toBe(409);
      expectSafeError(refused.body, 'task_archived');
    }
    const written = readFileSync(stderr, 'utf8').slice(before);
    expect(written, written).not.toMatch(/Activity failed/);
    expect(written, written).not.toMatch(/^\s+at /m);
  });
});
