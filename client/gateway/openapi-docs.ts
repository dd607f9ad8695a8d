/**
 * /openapi.json, the manual of the API, and `/docs`, the same document as a page. Built by
 * @fastify/swagger from the route schemas; each operation gets its words from operation-docs.ts
 * and its role from the route's `config.role`, the field the auth hook checks, so what the
 * document says a route needs is what the gateway asks for.
 */
import { STATUS_CODES } from 'node:http';
import swagger, { type SwaggerTransform, type SwaggerTransformObject } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { ERROR_TABLE } from '../../domain/errors';
import type { Role } from './auth';
import { OPERATION_DOCS } from './operation-docs';
import { ApiErrorBody, TaskBody } from './schemas';
import { MergeBody } from './merge-schemas';
import { ContainersStatusBody, CopyOutcomeBody, PreparationBody, SetupOutcomeBody } from './preparation-view';

const BEARER = [{ bearer: [] }];

const ROLE_TEXT: Record<Role | 'none', string> = {
  user: 'Role: **user**: the user or the operator token (`Authorization: Bearer …`).',
  operator: 'Role: **operator**: the operator token only; the user token is `403 forbidden`.',
  none: 'Role: **none**: no token.',
};

const ERROR_SCHEMA_REF = `#/components/schemas/${ApiErrorBody.$id}`;

/** What an error status means: its name and the codes of the error table that answer it. */
function errorStatusText(status: number): string {
  const codes = Object.entries(ERROR_TABLE)
    .filter(([, rule]) => rule.status === status)
    .map(([code]) => code);
  return `${STATUS_CODES[status] ?? 'Error'}.${codes.length > 0 ? ` error.code: ${codes.join(', ')}.` : ''}`;
}

type Operation = { responses?: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }> };
type Document = { paths?: Record<string, Record<string, Operation>>; components?: Record<string, unknown> };

/**
 * Every error response of the document as a reference to one response per status
 * (`#/components/responses/Error409`), itself the `$ref` to the one error schema: said once, not
 * once per operation (which made the document twice its size).
 */
const shareErrorResponses: SwaggerTransformObject = (documentObject) => {
  const document = (documentObject as { openapiObject: Document }).openapiObject;
  const shared: Record<string, unknown> = {};
  for (const path of Object.values(document.paths ?? {}))
    for (const operation of Object.values(path)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (response.content?.['application/json']?.schema?.$ref !== ERROR_SCHEMA_REF) continue;
        const name = `Error${status}`;
        shared[name] ??= {
          description: errorStatusText(Number(status)),
          content: { 'application/json': { schema: { $ref: ERROR_SCHEMA_REF } } },
        };
        (operation.responses as Record<string, unknown>)[status] = { $ref: `#/components/responses/${name}` };
      }
    }
  const byStatus = Object.keys(shared).sort();
  document.components = {
    ...document.components,
    responses: Object.fromEntries(byStatus.map((name) => [name, shared[name]])),
  };
  return document as ReturnType<SwaggerTransformObject>;
};

/** One operation as the manual shows it: its summary and description, its role (in words and as `x-role`) and its security. */
const documentOperation: SwaggerTransform = ({ schema, url, route }) => {
  if (!schema || (schema as { hide?: boolean }).hide) return { schema, url };
  const key = `${String(route.method)} ${url.replace(/:(\w+)/g, '{$1}')}`;
  const doc = OPERATION_DOCS[key];
  if (!doc) throw new Error(`${key} has no entry in client/gateway/operation-docs.ts`);
  const role = route.config?.role;
  const documented: FastifySchema & Record<string, unknown> = {
    ...schema,
    summary: doc.summary,
    description: `${doc.description}\n\n${ROLE_TEXT[role ?? 'none']}`,
    'x-role': role ?? 'none',
    security: role ? BEARER : [],
  };
  return { schema: documented, url };
};

/** Registered before the routes: the document is collected as they are added. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  app.addSchema(ApiErrorBody);
  app.addSchema(SetupOutcomeBody);
  app.addSchema(CopyOutcomeBody);
  app.addSchema(ContainersStatusBody);
  app.addSchema(PreparationBody);
  app.addSchema(TaskBody);
  app.addSchema(MergeBody);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'task-workspaces',
        version: '1.0.0',
        description:
          'Durable lifecycle of the git workspaces coding agents work in. Each operation states its role (`x-role`: `user`, `operator` or `none`); every error answers the one body `ApiError`.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: BEARER,
    },
    transform: documentOperation,
    transformObject: shareErrorResponses,
    // A shared schema is named by its $id (`#/components/schemas/ApiError`), not `def-0`.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
}

/** Registered with the routes (after the parsers and the 404 handler): no role, as documentation needs no token. */
export async function serveDocs(app: FastifyInstance): Promise<void> {
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { showExtensions: true, docExpansion: 'list' } });
  app.get('/openapi.json', { schema: { tags: ['health'] } }, async () => app.swagger());
}
