/** The HTTP API gateway (docs/api.md): stateless, so any number can run against one database and cluster. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import {
  answerClientError,
  answeredErrorCode,
  ApiError,
  badRequest,
  handleError,
  handleFrameworkError,
  MAX_REQUEST_LINE_BYTES,
} from './api-error';
import { registerAuth } from './auth';
import { serveConsole } from './console-site';
import { traceRequests } from './request-spans';
import { createGatewayMetrics } from './metrics';
import { registerOpenApi, serveDocs } from './openapi-docs';
import type { GatewayContext } from './context';
import { catalogRoutes } from './routes/catalog';
import { cleanupRoutes } from './routes/cleanup';
import { cleanupJobRoutes } from './routes/cleanup-jobs';
import { eventRoutes } from './routes/events';
import { gitStatusRoutes } from './routes/git-status';
import { mergeRoutes } from './routes/merges';
import { taskDiffRoutes } from './routes/task-diff';
import { healthRoutes } from './routes/health';
import { hostRoutes } from './routes/hosts';
import { logRoutes } from './routes/logs';
import { idleReleaseRoutes } from './routes/idle-release';
import { orphanSweepRoutes } from './routes/orphan-sweep';
import { sessionControlRoutes } from './routes/session-control';
import { sessionRoutes } from './routes/sessions';
import { sshTargetRoutes } from './routes/ssh-targets';
import { taskRoutes } from './routes/tasks';
import { taskPushRoutes } from './routes/task-push';
import { hasUnstorableText } from './unstorable-text';
import { collectMethodRoutes } from './method-routes';
import { malformedJsonMessage } from './validation-message';

export interface GatewayOptions extends GatewayContext {
  logger: Logger | false;
  tokens: { user: string; operator: string };
  metricsPublic?: boolean;
  /** A server span per request (request-spans.ts): set when the process traces (worker/tracing.ts). */
  traceRequests?: boolean;
}

export async function buildGateway(opts: GatewayOptions): Promise<FastifyInstance> {
  const app = Fastify({
    // Request lines are logged without their query values: a secret sent there by mistake
    // (`?token=…`) must not land in the log.
    loggerInstance: (opts.logger ? opts.logger.child({}, { serializers: { req: requestForLog } }) : undefined) as
      FastifyBaseLogger | undefined,
    bodyLimit: 1024 * 1024,
    clientErrorHandler: answerClientError,
    frameworkErrors: handleFrameworkError,
    // verbose: an error carries its schema, so a 400 can name the fields a body takes.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false, verbose: true } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // The first hooks, so a request's span covers its authentication and parsing; none when off.
  if (opts.traceRequests) traceRequests(app);

  const metrics = createGatewayMetrics(opts.pool, opts.config.sdkMetricsAddress, opts.config.limits.maximum);
  // Before any route: it watches them registered, for the 405s below.
  const methodRoutes = collectMethodRoutes(app);
  app.addHook('onResponse', async (request, reply) => {
    metrics.observeAnswer({
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: reply.statusCode,
      errorCode: answeredErrorCode(reply),
      seconds: reply.elapsedTime / 1000,
    });
  });

  await registerOpenApi(app);
  // A POST without a body (with or without a JSON content type) is an empty object, not a broken
  // body: `archive` (all fields optional) and the body-less routes answer it; a route with required
  // fields answers its validation error. Anything else is Fastify's parser, prototype-poisoning
  // checks included.
  // JSON is the only body there is: text/plain (which Fastify would hand a route as a string) and
  // every other type are 415 before any route reads them.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) =>
    body === ''
      ? done(null, undefined)
      : json(request, body as string, (err, value) => done(err && bodyError(err, body as string), value)),
  );
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined && request.routeOptions.schema?.body) request.body = {};
    // Refused here, before any route stores, runs or passes it on (a NUL was PostgreSQL's 500).
    if (hasUnstorableText([request.params, request.query, request.body]))
      throw badRequest('Text in a request must be well-formed Unicode without NUL characters.');
  });
  // URLs up to Node's head limit reach here; past the contract's own limit they are refused alike.
  app.addHook('onRequest', async (request) => {
    if (request.raw.url && request.raw.url.length > MAX_REQUEST_LINE_BYTES) throw new ApiError('uri_too_long');
  });
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) => {
    // A path that exists, asked with a method it does not answer: 405 with the methods it does.
    const allowed = methodRoutes.allowedFor(request.url);
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      return handleError(
        new ApiError('method_not_allowed', 'This method is not allowed here; see the Allow header.'),
        request,
        reply,
      );
    }
    return handleError(Object.assign(new Error('not found'), { statusCode: 404 }), request, reply);
  });
  registerAuth(app, opts.tokens);

  await app.register(healthRoutes(opts, metrics, opts.metricsPublic ?? false));
  await app.register(catalogRoutes(opts));
  await app.register(taskRoutes(opts));
  await app.register(sessionRoutes(opts));
  await app.register(sessionControlRoutes(opts));
  await app.register(logRoutes(opts));
  await app.register(gitStatusRoutes(opts));
  await app.register(mergeRoutes(opts));
  await app.register(taskPushRoutes(opts));
  await app.register(taskDiffRoutes(opts));
  await app.register(cleanupRoutes(opts));
  await app.register(cleanupJobRoutes(opts));
  await app.register(orphanSweepRoutes(opts));
  await app.register(idleReleaseRoutes(opts));
  await app.register(hostRoutes(opts));
  await app.register(sshTargetRoutes(opts));
  await app.register(eventRoutes(opts));
  await serveDocs(app);
  await serveConsole(app);
  return app;
}

/** Fastify's request serializer, with every query value replaced: names stay readable, values (possibly secrets) do not. */
function requestForLog(request: {
  method: string;
  url: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}) {
  return {
    method: request.method,
    url: redactQuery(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

function redactQuery(url: string): string {
  const at = url.indexOf('?');
  if (at === -1) return url;
  const names = url
    .slice(at + 1)
    .split('&')
    .map((pair) => pair.split('=')[0]!.slice(0, 64));
  return `${url.slice(0, at)}?${names.map((name) => `${name}=[redacted]`).join('&')}`;
}

/** A body the JSON parser refused, said with where it broke (Fastify's own error drops that). */
function bodyError(err: Error, body: string): Error {
  if ((err as { code?: string }).code !== 'FST_ERR_CTP_INVALID_JSON_BODY') return err;
  try {
    JSON.parse(body);
  } catch (syntax) {
    return new ApiError('invalid_request', malformedJsonMessage((syntax as Error).message));
  }
  // Valid JSON that the parser still refused: a __proto__ or constructor key.
  return new ApiError('invalid_request', 'The body has a field that is never accepted (__proto__ or constructor).');
}
