/** The HTTP API gateway of spec/api.md: stateless, so any number can run against one database and cluster. */
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { handleError } from './api-error';
import { registerAuth } from './auth';
import { createGatewayMetrics } from './metrics';
import type { GatewayContext } from './context';
import { catalogRoutes } from './routes/catalog';
import { cleanupRoutes } from './routes/cleanup';
import { gitStatusRoutes } from './routes/git-status';
import { healthRoutes } from './routes/health';
import { hostRoutes } from './routes/hosts';
import { logRoutes } from './routes/logs';
import { orphanSweepRoutes } from './routes/orphan-sweep';
import { sessionRoutes } from './routes/sessions';
import { taskRoutes } from './routes/tasks';

export interface GatewayOptions extends GatewayContext {
  logger: Logger | false;
  tokens: { user: string; operator: string };
  metricsPublic?: boolean;
}

export async function buildGateway(opts: GatewayOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: (opts.logger || undefined) as FastifyBaseLogger | undefined,
    bodyLimit: 1024 * 1024,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const { registry, requestSeconds } = createGatewayMetrics(opts.pool);
  app.addHook('onResponse', async (request, reply) => {
    requestSeconds.observe({ method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'task-workspaces', version: '1.0.0', description: 'Durable lifecycle of the git workspaces coding agents work in.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });
  // A POST without a body (with or without a JSON content type) is an empty object, not a broken
  // body: `archive` (all fields optional) and the body-less routes answer it; a route with required
  // fields answers its validation error. Anything else is Fastify's parser, prototype-poisoning
  // checks included.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => (body === '' ? done(null, undefined) : json(request, body as string, done)));
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined && request.routeOptions.schema?.body) request.body = {};
  });
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) => handleError(Object.assign(new Error('not found'), { statusCode: 404 }), request, reply));
  registerAuth(app, opts.tokens);

  await app.register(healthRoutes(opts, registry, opts.metricsPublic ?? false));
  await app.register(catalogRoutes(opts));
  await app.register(taskRoutes(opts));
  await app.register(sessionRoutes(opts));
  await app.register(logRoutes(opts));
  await app.register(gitStatusRoutes(opts));
  await app.register(cleanupRoutes(opts));
  await app.register(orphanSweepRoutes(opts));
  await app.register(hostRoutes(opts));
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}
