/** Connecting to Temporal and registering the project's search attributes (idempotent). */
import { Client, Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../../domain/search-attributes';
import { temporal } from '@temporalio/proto';
import { engineConnectOptions } from '../../worker/engine-connection';

/** A client of the engine at `address`, with the credentials `env` gives (worker/engine-connection.ts). */
export async function connectClient(
  address: string,
  namespace: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Client> {
  const connection = await Connection.connect(engineConnectOptions(address, env));
  return new Client({ connection, namespace });
}

export async function ensureSearchAttributes(client: Client, namespace: string): Promise<void> {
  const existing = await client.connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = SEARCH_ATTRIBUTES.filter((key) => !known.has(key.name));
  if (missing.length === 0) return;
  await client.connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      missing.map((key) => [key.name, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
    ),
  });
}
