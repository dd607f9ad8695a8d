/**
 * The set-up (`make start`, the compose `setup` service) against an engine that answers but has no
 * such namespace: one line naming the namespace and TEMPORAL_NAMESPACE, as the worker and the
 * gateway name it, never the engine's raw gRPC text; nothing of the database touched.
 */
import { expect, inject, it } from 'vitest';
import { prepareServices } from '../client/launcher/prepare-services';

it('a namespace the engine does not have is named in one line (TEMPORAL_NAMESPACE), after a short wait for it', async () => {
  const temporalAddress = inject('temporalAddress');
  const refused = await prepareServices({
    // Never reached: the engine's refusal comes first.
    databaseUrl: 'postgres://nobody@127.0.0.1:1/none',
    temporalAddress,
    namespace: 'no-such-namespace-here',
    engineEnv: {},
    namespaceWaitMs: 500,
  }).then(
    () => null,
    (err: unknown) => err as Error,
  );
  expect(refused?.message).toBe(
    `cannot reach the Temporal engine at ${temporalAddress}: the namespace no-such-namespace-here does not exist there (TEMPORAL_NAMESPACE)`,
  );
});
