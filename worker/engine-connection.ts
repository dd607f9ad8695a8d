/**
 * How every part reaches the engine, read the way the Temporal tools read it (Temporal's
 * envconfig): `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS` and
 * `TEMPORAL_TLS_*`, `TEMPORAL_PROFILE` and the config file. The worker, the gateway, the launcher
 * and the client helpers all connect through this one reading.
 */
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow';

export interface EngineConnectOptions {
  address: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
  metadata?: Record<string, string | Buffer>;
}

/**
 * The connection options for `address` (the config's, which already holds TEMPORAL_ADDRESS or
 * the default) with the credentials the environment and the profile give. A certificate or key
 * that cannot be read fails here with envconfig's own message, before any connection is tried.
 */
export function engineConnectOptions(address: string, env: NodeJS.ProcessEnv = process.env): EngineConnectOptions {
  const overrideEnvVars = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
  const { connectionOptions } = loadClientConnectConfig({ overrideEnvVars });
  return {
    address,
    ...(connectionOptions.tls !== undefined && connectionOptions.tls !== null ? { tls: connectionOptions.tls } : {}),
    ...(connectionOptions.apiKey !== undefined ? { apiKey: connectionOptions.apiKey } : {}),
    ...(connectionOptions.metadata ? { metadata: connectionOptions.metadata } : {}),
  };
}
