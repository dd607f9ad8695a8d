/** Entry point of the API gateway process. */
import os from 'node:os';
import pino from 'pino';
import { createPool } from '../../db/pool';
import { loadConfig } from '../../domain/config';
import { connectClient } from '../temporal';
import { buildGateway } from './app';

async function main(): Promise<void> {
  const logger = pino({ name: 'gateway' });
  const config = loadConfig(process.env, { cwd: process.cwd(), hostname: os.hostname() });
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required (the launcher sets it)');
  if (!config.userToken || !config.operatorToken) throw new Error('TWS_USER_TOKEN and TWS_OPERATOR_TOKEN are required (the launcher sets them)');
  const pool = createPool(config.databaseUrl);
  const temporal = await connectClient(config.temporalAddress, config.temporalNamespace);
  const app = await buildGateway({
    config,
    pool,
    temporal,
    logger,
    tokens: { user: config.userToken, operator: config.operatorToken },
    metricsPublic: process.env.TWS_METRICS_PUBLIC === '1',
  });
  await app.listen({ host: config.apiHost, port: config.apiPort });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void app.close().then(async () => {
        await pool.end();
        await temporal.connection.close();
        process.exit(0);
      });
    });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
