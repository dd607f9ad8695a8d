/**
 * `make start`: brings up the whole system on one machine. Embedded PostgreSQL unless
 * DATABASE_URL is set; the Temporal dev server (Web UI, SQLite under .data/) unless
 * TEMPORAL_ADDRESS is set; migrations; the worker and the API gateway. Ctrl-C stops what it started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../domain/config';
import { SEARCH_ATTRIBUTES } from '../domain/search-attributes';
import { ensureDatabase, startEmbeddedPostgres, type PostgresService } from './postgres-service';
import { resolveTemporalCli } from './temporal-cli';
import { prepareServices } from './prepare-services';
import { buildServices, bundleWorkflowsTo, serviceArgs } from './service-build';

const root = path.resolve(__dirname, '..');

interface Secrets {
  userToken: string;
  operatorToken: string;
  postgresPassword: string;
}

async function loadSecrets(file: string): Promise<Secrets> {
  if (existsSync(file)) return JSON.parse(await readFile(file, 'utf8')) as Secrets;
  const secrets: Secrets = {
    userToken: randomBytes(24).toString('base64url'),
    operatorToken: randomBytes(24).toString('base64url'),
    postgresPassword: randomBytes(18).toString('base64url'),
  };
  await writeFile(file, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600 });
  return secrets;
}

function startNodeService(entry: string, env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(process.execPath, serviceArgs(root, entry), { cwd: root, env, stdio: 'inherit' });
}

async function stopChild(child: ChildProcess | null, graceMs = 10_000): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

async function main(): Promise<void> {
  const config = loadConfig(process.env, { cwd: root, hostname: os.hostname() });
  // Readable by the postgres user that embedded PostgreSQL runs as when started by root; the
  // secrets file inside is 0600.
  await mkdir(config.dataDir, { recursive: true });
  await chmod(config.dataDir, 0o755);
  const secretsFile = path.join(config.dataDir, 'secrets.json');
  const secrets = await loadSecrets(secretsFile);

  let postgres: PostgresService | null = null;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    postgres = await startEmbeddedPostgres({ dataDir: path.join(config.dataDir, 'postgres'), port: Number(process.env.TWS_PG_PORT || 54329), password: secrets.postgresPassword });
    databaseUrl = await ensureDatabase(postgres.serverUrl, 'task_workspaces');
  }

  let temporalServer: ChildProcess | null = null;
  const temporalAddress = process.env.TEMPORAL_ADDRESS || '127.0.0.1:7233';
  const uiPort = Number(process.env.TWS_TEMPORAL_UI_PORT || 8233);
  if (!process.env.TEMPORAL_ADDRESS) {
    const [ip, port] = temporalAddress.split(':');
    temporalServer = spawn(
      resolveTemporalCli(root),
      ['server', 'start-dev', '--ip', ip!, '--port', port!, '--ui-port', String(uiPort), '--db-filename', path.join(config.dataDir, 'temporal.sqlite'),
        '--namespace', config.temporalNamespace, '--log-level', 'warn', ...SEARCH_ATTRIBUTES.flatMap((key) => ['--search-attribute', `${key.name}=Keyword`])],
      { cwd: root, stdio: ['ignore', 'ignore', 'inherit'], detached: false },
    );
  }

  const children: ChildProcess[] = [];
  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.log('\nstopping…');
    await Promise.all(children.map((child) => stopChild(child)));
    await stopChild(temporalServer);
    if (postgres) await postgres.stop();
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  try {
    await prepareServices({
      databaseUrl,
      temporalAddress,
      namespace: config.temporalNamespace,
      config,
      isTemporalDead: () => temporalServer !== null && temporalServer.exitCode !== null,
    });
  } catch (err) {
    console.error('start-up failed:', err instanceof Error ? err.message : err);
    await stopAll(1);
    return;
  }

  const workflowBundle = path.join(config.dataDir, 'workflow-bundle.js');
  try {
    buildServices(root);
    bundleWorkflowsTo(root, workflowBundle);
  } catch (err) {
    console.error('start-up failed:', err instanceof Error ? err.message : err);
    await stopAll(1);
    return;
  }

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TWS_WORKFLOW_BUNDLE: workflowBundle,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TWS_USER_TOKEN: config.userToken ?? secrets.userToken,
    TWS_OPERATOR_TOKEN: config.operatorToken ?? secrets.operatorToken,
    TWS_DATA_DIR: config.dataDir,
  };
  for (const entry of ['worker/main.ts', 'client/gateway/main.ts']) {
    const child = startNodeService(entry, env);
    child.once('exit', (code) => {
      if (!stopping) {
        console.error(`${entry} exited (${code}); stopping everything`);
        void stopAll(1);
      }
    });
    children.push(child);
  }

  console.log(`
task-workspaces is running
  API:          http://${config.apiHost}:${config.apiPort}  (OpenAPI at /openapi.json)
  Temporal UI:  ${temporalServer ? `http://127.0.0.1:${uiPort}` : `(your Temporal at ${temporalAddress})`}
  API tokens:   ${config.userToken ? 'from TWS_USER_TOKEN / TWS_OPERATOR_TOKEN' : `${secretsFile} (userToken, operatorToken; mode 0600)`}
  Data:         ${config.dataDir}
Ctrl-C stops everything.`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
