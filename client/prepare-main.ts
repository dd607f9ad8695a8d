/** One-shot set-up for a cluster deployment (docker-compose `setup` service): search attributes and migrations. */
import { prepareServices } from './prepare-services';
import { errorLine } from './supervisor';
import { adoptEngineProfile } from '../worker/engine-connection';

adoptEngineProfile();
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  console.error('DATABASE_URL is required');
  process.exit(1);
}
prepareServices({
  databaseUrl,
  temporalAddress: process.env.TEMPORAL_ADDRESS || '127.0.0.1:7233',
  namespace: process.env.TEMPORAL_NAMESPACE || 'default',
})
  .then(() => console.log('services prepared'))
  .catch((err) => {
    console.error(`set-up failed: ${errorLine(err)}`);
    process.exit(1);
  });
