/**
 * A migrated database for each harness, copied from a template migrated once (CREATE DATABASE …
 * TEMPLATE takes tens of milliseconds where the migrations take hundreds, and a run makes hundreds
 * of harnesses). The run's shared server gets its template in the global setup; a server of a
 * test file's own (one it kills) gets one on its first use in that file's process. The product's
 * own migrations are still what made each template: a change to them reaches every test.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { ensureDatabase } from '../../client/launcher/postgres-service';
import { migrate } from '../../db/migrate';

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: `${serverUrl}/postgres` });
  admin.on('error', () => {}); // a server killed under it fails the query in hand
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

/** Makes and migrates a template database on the server; its name. */
export async function migratedTemplate(serverUrl: string): Promise<string> {
  const name = `tws_template_${randomUUID().replace(/-/g, '')}`;
  await migrate(await ensureDatabase(serverUrl, name));
  return name;
}

const templates = new Map<string, Promise<string>>();

/** A new database on the server, migrated (a copy of the server's template); its URL. */
export async function migratedDatabase(serverUrl: string, template?: string): Promise<string> {
  if (template) templates.set(serverUrl, Promise.resolve(template));
  let made = templates.get(serverUrl);
  if (!made) {
    made = migratedTemplate(serverUrl);
    templates.set(serverUrl, made);
    made.catch(() => templates.delete(serverUrl));
  }
  const name = `tws_${randomUUID().replace(/-/g, '')}`;
  await adminQuery(serverUrl, `CREATE DATABASE "${name}" TEMPLATE "${await made}"`);
  return `${serverUrl}/${name}`;
}
