/**
 * The benchmark's two baselines, in one Koa process:
 *
 * - `GET /ceiling` (S0): a constant JSON body, the framework's ceiling.
 * - `POST /direct` (S1): the create a payment intent amounts to without the queue.
 *   It reads the body with the api's own JSON middleware, validates it with
 *   `parsePaymentIntentCreate`, builds the document the worker builds and inserts it
 *   into MongoDB, and answers with the presented JSON (client secret included).
 *
 * Authentication is one cheap header check: the bearer token must have the shape of
 * an API key (no lookup, no hashing), so S1 sends the same header as S2 and still
 * measures the store, not the key cache. There is no idempotency and no event.
 *
 * Configured like the api (PORT, HOST, MONGODB_URL, MONGODB_DB, OPERATORS,
 * DEFAULT_CURRENCY); prints `baseline listening` on stdout once it listens.
 */
import { createServer } from 'node:http';
import Router from '@koa/router';
import Koa from 'koa';
import { parseBody } from '../api/middleware/body.js';
import { parsePaymentIntentCreate } from '../api/schemas/payment-intents.js';
import type { State } from '../api/context.js';
import { looksLikeKey } from '../common/api-keys.js';
import { loadConfig } from '../common/config.js';
import { ApiError, errors } from '../common/errors.js';
import { IdGenerator, randomBase62 } from '../common/ids.js';
import type { PaymentIntentDoc } from '../common/documents.js';
import { connectMongo } from '../common/mongo.js';
import { presentPaymentIntent } from '../common/presenters.js';

const CEILING_BODY = JSON.stringify({ object: 'ceiling', ok: true });

async function main(): Promise<void> {
  const config = loadConfig(process.env, { needRedis: false });
  const mongo = await connectMongo(config.mongodbUrl, config.mongodbDb, 'bench-baseline', config.storeProfile);
  const ids = new IdGenerator(Date.now);
  const app = new Koa<State>();
  const router = new Router<State>();

  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const known = err instanceof ApiError;
      ctx.status = known ? err.status : 500;
      ctx.type = 'application/json';
      ctx.body = JSON.stringify({ error: known ? err.detail() : { code: 'internal_error', message: (err as Error).message } });
    }
  });

  router.get('/ceiling', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = CEILING_BODY;
  });

  router.post(
    '/direct',
    async (ctx, next) => {
      const match = /^Bearer +(\S+) *$/i.exec(ctx.get('Authorization'));
      if (!match || !looksLikeKey(match[1] as string)) throw errors.apiKeyMissing();
      await next();
    },
    parseBody({ form: false }),
    async (ctx) => {
      const nowMs = Date.now();
      const input = parsePaymentIntentCreate(ctx.state.body ?? {}, {
        operators: config.operators,
        defaultCurrency: config.defaultCurrency,
        now: Math.floor(nowMs / 1000),
      });
      const id = ids.next('payment_intent');
      const doc: PaymentIntentDoc = {
        _id: id,
        project: 'bench',
        livemode: false,
        amount: input.amount,
        currency: input.currency,
        description: input.description,
        status: 'new',
        client_secret: `${id}_secret_${randomBase62(24)}`,
        automatic_operator: input.automatic_operator,
        allowed_operators: input.allowed_operators,
        selected_operator: input.selected_operator,
        metadata: input.metadata,
        created: Math.floor(nowMs / 1000),
        expires_at: input.expires_at,
      };
      await mongo.collections.paymentIntents.insertOne(doc);
      ctx.type = 'application/json';
      ctx.body = JSON.stringify(presentPaymentIntent(doc, { withSecret: true }));
    },
  );

  app.use(router.routes());
  const server = createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  process.stdout.write(`${JSON.stringify({ msg: 'baseline listening', port: config.port })}\n`);

  const stop = () => {
    server.close();
    server.closeAllConnections();
    mongo.client.close().finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`baseline failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
