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
/** The environment as envconfig reads it: its string values. */
function envVars(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

/**
 * Called first by each entry point: where TEMPORAL_ADDRESS or TEMPORAL_NAMESPACE is not set, the
 * profile's (TEMPORAL_PROFILE, default `default`, in TEMPORAL_CONFIG_FILE or Temporal's own
 * config file) is adopted into `env`, so the configuration, the launcher's choice of running its
 * own engine or not, and the services it starts all see the address the Temporal tools would use.
 * A variable that is set always wins, as with the Temporal CLI.
 */
export function adoptEngineProfile(env: NodeJS.ProcessEnv = process.env): void {
  if (env.TEMPORAL_ADDRESS && env.TEMPORAL_NAMESPACE) return;
  const { connectionOptions, namespace } = loadClientConnectConfig({ overrideEnvVars: envVars(env) });
  if (!env.TEMPORAL_ADDRESS && connectionOptions.address) env.TEMPORAL_ADDRESS = connectionOptions.address;
  if (!env.TEMPORAL_NAMESPACE && namespace) env.TEMPORAL_NAMESPACE = namespace;
}

export function engineConnectOptions(address: string, env: NodeJS.ProcessEnv = process.env): EngineConnectOptions {
  const { connectionOptions } = loadClientConnectConfig({ overrideEnvVars: envVars(env) });
  return {
    address,
    ...(connectionOptions.tls !== undefined && connectionOptions.tls !== null ? { tls: connectionOptions.tls } : {}),
    ...(connectionOptions.apiKey !== undefined ? { apiKey: connectionOptions.apiKey } : {}),
    ...(connectionOptions.metadata ? { metadata: connectionOptions.metadata } : {}),
  };
}
