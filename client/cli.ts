/**
 * Operator CLI: `node --import tsx client/cli.ts <command>`.
 *   jobs [state]          list cleanup jobs, newest first, with each run's Temporal UI link
 *                         (optionally only one state, e.g. needs_operator)
 *   retry <operationId>   give a job waiting for an operator a fresh round of attempts
 *   cancel <operationId>  end a waiting job (pending, retry_wait, needs_operator): the barrier
 *                         lifts; a delete's leftovers are recorded abandoned, never removed
 * Reads DATABASE_URL and TEMPORAL_ADDRESS like the services; without DATABASE_URL it uses the
 * embedded PostgreSQL that `make start` runs (its password is in <dataDir>/secrets.json).
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { continuedJobOf, findJob, listJobs } from '../db/cleanup-jobs';
import type { Keyset } from '../db/keyset';
import { createPool } from '../db/pool';
import { CLEANUP_JOB_STATES } from '../domain/cleanup';
import { loadConfig } from '../domain/config';
import { operatorCancel, retryCleanup } from './engine-client';
import { temporalLinks } from './temporal-links';
import { connectClient } from './temporal';

function embeddedDatabaseUrl(dataDir: string): string | null {
  const file = path.join(dataDir, 'secrets.json');
  if (!existsSync(file)) return null;
  const { postgresPassword } = JSON.parse(readFileSync(file, 'utf8')) as { postgresPassword: string };
  return `postgres://postgres:${encodeURIComponent(postgresPassword)}@127.0.0.1:${Number(process.env.TWS_PG_PORT || 54329)}/task_workspaces`;
}

async function main(argv: string[]): Promise<number> {
  const config = loadConfig(process.env, { cwd: process.cwd(), hostname: os.hostname() });
  const databaseUrl = config.databaseUrl ?? embeddedDatabaseUrl(config.dataDir);
  if (!databaseUrl) {
    console.error('DATABASE_URL is required (or run it where `make start` keeps its .data/)');
    return 2;
  }
  const pool = createPool(databaseUrl, 2);
  try {
    const [command, arg] = argv;
    if (command === 'jobs') {
      const state = CLEANUP_JOB_STATES.find((s) => s === arg);
      if (arg !== undefined && !state) {
        console.error(`no job state ${arg}: one of ${CLEANUP_JOB_STATES.join(', ')}`);
        return 2;
      }
      // Every job, newest first, a page at a time (the list the API pages).
      for (let after: Keyset | null = null, more = true; more; ) {
        const page: Awaited<ReturnType<typeof listJobs>> = await listJobs(pool, { state }, { limit: 200, after });
        for (const job of page) {
          console.log([job.operation_id, job.task_id, job.trigger, job.state, `attempts=${job.attempts}`, `next=${job.next_attempt_at?.toISOString() ?? '-'}`, `error=${job.last_error ?? '-'}`, job.workflow_id, temporalLinks(config, job.workflow_id).temporal].join('  '));
        }
        const last = page[page.length - 1];
        more = page.length === 200 && last !== undefined;
        after = last ? { at: last.exact_at, key: last.operation_id } : null;
      }
      return 0;
    }
    if (command === 'retry' && arg) {
      const job = await findJob(pool, arg);
      if (!job) {
        console.error('no such cleanup job');
        return 1;
      }
      if (job.state !== 'needs_operator') {
        console.error(`the job is ${job.state}, not waiting for an operator`);
        return 1;
      }
      const client = await connectClient(config.temporalAddress, config.temporalNamespace);
      await retryCleanup(client, job.workflow_id);
      await client.connection.close();
      console.log(`retry requested for ${job.operation_id}`);
      return 0;
    }
    if (command === 'cancel' && arg) {
      const job = await findJob(pool, arg);
      if (!job) {
        console.error('no such cleanup job');
        return 1;
      }
      const client = await connectClient(config.temporalAddress, config.temporalNamespace);
      try {
        const ended = await operatorCancel(client, config, continuedJobOf(job));
        if (!ended.ok) {
          console.error(`refused: ${ended.code}`);
          return 1;
        }
        console.log(`${job.operation_id} ${ended.state}`);
        return 0;
      } finally {
        await client.connection.close();
      }
    }
    console.error('usage: cli.ts jobs [state] | retry <operationId> | cancel <operationId>');
    return 2;
  } finally {
    await pool.end();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
