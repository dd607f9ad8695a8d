/**
 * GET /v1/events: Server-Sent Events of task, session, execution, merge and cleanup job changes,
 * what the console and `tws` follow (docs/api.md#following-changes). A client that reconnects with
 * Last-Event-ID gets every retained event after it, then the live ones, each once.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { oldestEventId, readEventRange, type ChangeEvent, type EventKind } from '../../../db/events';
import type { Role } from '../auth';
import type { GatewayContext } from '../context';
import { createEventHub, type EventHub } from '../event-hub';
import { EventStream } from '../event-stream';
import { errorResponses } from '../schemas';

/** The role each kind's own GET route needs: a token is sent only what it may read. */
const KIND_ROLES: Record<EventKind, Role> = {
  task: 'user', // GET /v1/tasks/:id
  session: 'user', // GET /v1/sessions/:id
  execution: 'user', // GET /v1/sessions/:id (its execution), /v1/executions/:id/logs
  merge: 'user', // GET /v1/merges/:operationId
  cleanup_job: 'user', // GET /v1/cleanup-jobs/:operationId
};

const mayRead = (role: Role) => (event: ChangeEvent) => role === 'operator' || KIND_ROLES[event.kind] === 'user';

const REPLAY_PAGE = 1_000;

const EventsQuery = Type.Object(
  {
    /** The same as the Last-Event-ID header, for clients that cannot set it: an event id, nothing else. */
    lastEventId: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$' })),
  },
  { additionalProperties: false },
);

/** The id a client last saw, or null for none; `invalid` is answered as an id not retained. */
function lastSeen(header: string | string[] | undefined, query: string | undefined): number | 'invalid' | null {
  const text = typeof header === 'string' ? header.trim() : query;
  if (text === undefined || text === '') return null;
  return /^[0-9]{1,15}$/.test(text) ? Number(text) : 'invalid';
}

export function eventRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    let hub: EventHub | null = null;
    const hubOf = (): EventHub => {
      if (!ctx.config.databaseUrl) throw new Error('DATABASE_URL is required for /v1/events');
      hub ??= createEventHub(ctx.config.databaseUrl, app.log);
      return hub;
    };
    // Before the server waits for open requests to end: streams never end by themselves.
    app.addHook('preClose', async () => {
      await hub?.close();
    });

    app.get(
      '/v1/events',
      {
        config: { role: 'user' },
        schema: {
          tags: ['events'],
          querystring: EventsQuery,
          headers: Type.Object({ 'last-event-id': Type.Optional(Type.String()) }),
          response: {
            200: {
              description: 'A stream of `change` events (and `reset` when the id asked for is not retained).',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
            ...errorResponses,
          },
        },
      },
      async (request, reply) => {
        const events = hubOf();
        // A database that cannot be reached is the usual 503 here, before the stream opens.
        await events.ready();
        const after = lastSeen(request.headers['last-event-id'], request.query.lastEventId);
        reply.hijack();
        const stream = new EventStream(reply.raw, mayRead(request.callerRole ?? 'user'));
        // The horizon and the subscription in one step: nothing between them is missed or sent twice.
        const horizon = events.horizon;
        const unsubscribe = events.subscribe(stream);
        reply.raw.on('close', unsubscribe);
        try {
          if (after !== null) await catchUp(ctx, stream, after, horizon);
          stream.goLive();
        } catch (err) {
          request.log.warn({ err }, 'events: a replay failed; the client reconnects');
          stream.drop();
        }
      },
    );
  };
}

/** Every retained event in (after, horizon], or one reset when `after` is not retained or unknown. */
async function catchUp(ctx: GatewayContext, stream: EventStream, after: number | 'invalid', horizon: number) {
  if (after === 'invalid' || after > horizon) return stream.reset(horizon);
  if (after === horizon) return;
  const oldest = await oldestEventId(ctx.pool);
  // Pruned past it (or nothing is left to say what came after it): the client refetches.
  if (oldest === null || after < oldest - 1) return stream.reset(horizon);
  for (let from = after; from < horizon && stream.isOpen;) {
    const page = await readEventRange(ctx.pool, from, horizon, REPLAY_PAGE);
    if (page.length === 0) break;
    await stream.replay(page);
    from = page[page.length - 1]!.id;
  }
}
