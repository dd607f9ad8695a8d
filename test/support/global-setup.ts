/**
 * One Temporal dev server and one PostgreSQL for the whole run. The dev server is the resolved
 * Temporal CLI binary (never a download); PostgreSQL is DATABASE_URL when set, else embedded.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type PostgresService } from '../../client/launcher/postgres-service';
import { buildServices } from '../../client/launcher/service-build';
import { resolveTemporalCli } from '../../client/launcher/temporal-cli';
import { SEARCH_ATTRIBUTES } from '../../domain/search-attributes';
import { bundleWorkflows } from '../../worker/worker';
import { migratedTemplate } from './databases';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    postgresServerUrl: string;
    workflowBundlePath: string;
    /** A database migrated once, which each harness copies (test/support/databases.ts). */
    templateDatabase: string;
  }
}

export default async function setup(project: TestProject) {
  const root = process.cwd();
  buildServices(root); // the worker that tests run as a child process is the compiled one
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'tws-test-run-'));
  await chmod(scratch, 0o755); // embedded PostgreSQL runs as the postgres user when tests run as root
  const [env, postgres, bundle] = await Promise.all([
    TestWorkflowEnvironment.createLocal({
      server: {
        executable: { type: 'existing-path', path: resolveTemporalCli(root) },
        searchAttributes: SEARCH_ATTRIBUTES,
        log: { format: 'pretty', level: 'error' },
      },
    }),
    process.env.DATABASE_URL
      ? Promise.resolve<PostgresService>({ serverUrl: serverPart(process.env.DATABASE_URL), stop: async () => {} })
      : startEmbeddedPostgres({
          dataDir: path.join(scratch, 'pg'),
          port: 20000 + Math.floor(Math.random() * 20000),
          password: 'test',
        }),
    // The worker's own bundle (its interceptor modules included), from the sources.
    bundleWorkflows(),
  ]);
  const bundlePath = path.join(scratch, 'workflow-bundle.js');
  await writeFile(bundlePath, bundle.code);

  project.provide('temporalAddress', env.connection.options.address);
  project.provide('postgresServerUrl', postgres.serverUrl);
  project.provide('templateDatabase', await migratedTemplate(postgres.serverUrl));
  project.provide('workflowBundlePath', bundlePath);

  return async () => {
    await env.teardown();
    await postgres.stop();
    await rm(scratch, { recursive: true, force: true });
  };
}

function serverPart(url: string): string {
  const u = new URL(url);
  u.pathname = '';
  return u.toString().replace(/\/$/, '');
}
