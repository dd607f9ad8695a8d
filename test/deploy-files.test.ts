/**
 * The deployment files say only what the code does: every
 * container's command is a file the build makes, every variable docker-compose.yml sets is one
 * the code reads, and the configuration table (docs/configuration.md) lists every setting the code reads.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { agentHostNeeds, type ServiceRole } from '../domain/agent-host-needs';
import { loadConfig } from '../domain/config';

const root = path.resolve(__dirname, '..');
const PRODUCT_FOLDERS = [
  'activities',
  'bench',
  'client',
  'db',
  'domain',
  'executors',
  'git',
  'ssh',
  'worker',
  'workflows',
];
/** The folders scripts/build.mjs compiles into .build/ (read from the script, so the two cannot drift). */
const builtFolders = JSON.parse(
  /const folders = (\[[^\]]*\])/
    .exec(readFileSync(path.join(root, 'scripts/build.mjs'), 'utf8'))![1]!
    .replace(/'/g, '"'),
) as string[];

function sourcesUnder(dir: string, kinds = /\.(ts|mjs|sh)$/): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(full, kinds);
    return kinds.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}
const productText = [...PRODUCT_FOLDERS, 'bin', 'scripts']
  .flatMap((folder) => sourcesUnder(path.join(root, folder)))
  .map((file) => readFileSync(file, 'utf8'))
  .join('\n');
/** What every agent is given (domain/agent-env.ts; docs/security.md "The agent's environment"), not a setting of the service. */
const GIVEN_TO_AGENTS = new Set([
  'TWS_SESSION_ID',
  'TWS_TASK_ID',
  'TWS_EXECUTION_ID',
  'TWS_WORKSPACE',
  'TWS_PROMPT_FILE',
  // The shim's own: the file bubblewrap reads the agent's variables from.
  'TWS_SANDBOX_ARGS',
  // The shim's own: the control groups it puts the agent in.
  'TWS_CGROUP_PROCS',
  // The shim's own: those groups are a container's, joined and left be.
  'TWS_CGROUP_SHARED',
  // The shim's own: it confines what it runs (an agent entered into a container).
  'TWS_CONFINE',
]);
/** Every TWS_* setting the product reads (from process.env or an env object). */
const settingsRead = new Set((productText.match(/\bTWS_[A-Z0-9_]+\b/g) ?? []).filter((n) => !GIVEN_TO_AGENTS.has(n)));
/** The variables Temporal's envconfig reads (its own source, not our list of it). */
const envconfigText = sourcesUnder(path.join(root, 'node_modules/@temporalio/envconfig/lib'), /\.js$/)
  .map((f) => readFileSync(f, 'utf8'))
  .join('\n');

/** The `.build/<x>.js` a command runs, as the TypeScript source it is built from. */
function builtEntries(command: string | string[]): string[] {
  const words = (Array.isArray(command) ? command : [command]).flatMap((c) => c.split(/\s+/));
  return words.filter((w) => w.startsWith('.build/')).map((w) => w.replace(/^\.build\//, '').replace(/\.js$/, '.ts'));
}

describe('docker-compose.yml', () => {
  const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, { build?: string; command?: string | string[]; environment?: Record<string, unknown> }>;
  };
  const ours = Object.entries(compose.services).filter(([, s]) => s.build === '.');
  const dockerfileCmd = JSON.parse(/^CMD (\[.*\])$/m.exec(readFileSync(path.join(root, 'Dockerfile'), 'utf8'))![1]!);

  it('runs, in each of its own containers, a file the build makes', () => {
    expect(ours.map(([name]) => name).sort()).toEqual(['gateway', 'setup', 'worker-1', 'worker-2']);
    for (const [name, service] of [...ours, ['Dockerfile CMD', { command: dockerfileCmd }] as const]) {
      const entries = builtEntries(service.command ?? dockerfileCmd);
      expect(entries.length, name).toBeGreaterThan(0);
      for (const entry of entries) {
        expect(existsSync(path.join(root, entry)), `${name}: ${entry}`).toBe(true);
        expect(builtFolders, `${name}: ${entry}`).toContain(entry.split('/')[0]);
      }
    }
  });

  it('sets only variables the code reads', () => {
    const set = new Set(ours.flatMap(([, s]) => Object.keys(s.environment ?? {})));
    expect(set.size).toBeGreaterThan(5);
    for (const name of set) {
      if (name.startsWith('TWS_')) expect(settingsRead.has(name), name).toBe(true);
      else if (name.startsWith('TEMPORAL_')) expect(envconfigText, name).toContain(name);
      else expect(productText, name).toMatch(new RegExp(`\\b${name}\\b`));
    }
  });
});

type ComposeService = {
  build?: string;
  command?: string | string[];
  environment?: Record<string, unknown>;
  privileged?: boolean;
  cgroup?: string;
  security_opt?: string[];
};

/** A service's environment as its process sees it: `${X:-default}` is its default, `${X:?…}` a value the operator must give. */
function serviceEnv(service: ComposeService): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([name, value]) => [
      name,
      String(value).replace(/\$\{[A-Z0-9_]+(:-([^}]*)|:\?[^}]*)?\}/g, (_, __, fallback) => fallback ?? 'given'),
    ]),
  );
}

describe('docker-compose.yml gives each service what its start-up checks', () => {
  const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  const roles = Object.entries(compose.services).flatMap(([name, service]) => {
    const command = [service.command ?? []].flat().join(' ');
    const role: ServiceRole | null = command.includes('.build/worker/main.js')
      ? 'worker'
      : command.includes('.build/client/gateway/main.js')
        ? 'gateway'
        : null;
    if (!role) return [];
    const config = loadConfig(serviceEnv(service), { cwd: '/app', hostname: name, cpus: 2 });
    return [{ name, service, role, config, needs: agentHostNeeds(config, role) }];
  });

  it('runs two workers, which start agents, and a gateway, which starts none', () => {
    expect(roles.map((r) => [r.name, r.role, r.needs.startsAgents])).toEqual([
      ['worker-1', 'worker', true],
      ['worker-2', 'worker', true],
      ['gateway', 'gateway', false],
    ]);
  });

  it('lets bubblewrap make its namespaces where the sandbox is required', () => {
    for (const { name, service, needs } of roles) {
      if (!needs.sandbox) continue;
      const opts = service.security_opt ?? [];
      const unconfined = opts.includes('seccomp=unconfined') && opts.includes('apparmor=unconfined');
      expect(service.privileged === true || unconfined, name).toBe(true);
    }
  });

  it("gives writable control groups with their controllers where the limits are required, a folder of each one's own", () => {
    const parents: string[] = [];
    for (const { name, service, needs, config } of roles) {
      if (!needs.cgroups) continue;
      // A container's own hierarchy is read-only, and its root (holding the service) can give its
      // children no controller: the host's, writable.
      expect({ name, privileged: service.privileged, cgroup: service.cgroup }).toEqual({
        name,
        privileged: true,
        cgroup: 'host',
      });
      parents.push(config.limits.cgroupParent);
    }
    expect(parents.length).toBeGreaterThan(0);
    expect(new Set(parents).size, parents.join(', ')).toBe(parents.length);
  });
});

/** The `## Configuration` section of docs/configuration.md, up to the next `## ` heading (its `###` groups included). */
function configurationTable(): string {
  const doc = readFileSync(path.join(root, 'docs/configuration.md'), 'utf8');
  const start = doc.indexOf('\n## Configuration');
  expect(start, 'docs/configuration.md has a "## Configuration" section').toBeGreaterThanOrEqual(0);
  const end = doc.indexOf('\n## ', start + 5);
  return doc.slice(start, end === -1 ? undefined : end);
}

describe('docs/configuration.md configuration table', () => {
  it('lists every setting the code reads', () => {
    const table = configurationTable();
    const listed = new Set(table.match(/`TWS_[A-Z0-9_]+`/g)?.map((x) => x.slice(1, -1)));
    expect(settingsRead.size).toBeGreaterThan(30);
    expect([...settingsRead].filter((name) => !listed.has(name)).sort()).toEqual([]);
  });

  it('lists every TEMPORAL_* and OTEL_* setting the product names, by name or by its family (`TEMPORAL_TLS_*`)', () => {
    const table = configurationTable();
    const named = new Set(
      (productText.match(/\b(TEMPORAL|OTEL)_[A-Z0-9_]*[A-Z0-9]\b/g) ?? []).filter((n) => !/_$/.test(n)),
    );
    expect(named.size).toBeGreaterThan(10);
    const families = [...table.matchAll(/`((?:TEMPORAL|OTEL)_[A-Z0-9_]*)\*`/g)].map((m) => m[1]!);
    const listed = (name: string) => table.includes(`\`${name}\``) || families.some((f) => name.startsWith(f));
    expect([...named].filter((name) => !listed(name)).sort()).toEqual([]);
  });
});
