/** One-shot set-up for a cluster deployment (docker-compose `setup` service): search attributes and migrations. */
import { prepareServices } from './prepare-services';
import { errorLine } from './supervisor';
import { adoptEngineProfile } from '../../worker/engine-connection';
import { engineFailureLine } from '../../worker/engine-failure';

async function main(): Promise<void> {
  try {
    adoptEngineProfile();
  } catch (err) {
    // A profile or credential file that cannot be read: named by its variable, never its path.
    throw new Error((await engineFailureLine(err).catch(() => null)) ?? errorLine(err));
  }
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL is required');
  await prepareServices({
    databaseUrl,
    temporalAddress: process.env.TEMPORAL_ADDRESS || '127.0.0.1:7233',
    namespace: process.env.TEMPORAL_NAMESPACE || 'default',
  });
}

main()
  .then(() => console.log('services prepared'))
  .catch((err) => {
    console.error(`set-up failed: ${errorLine(err)}`);
    process.exit(1);
  });
