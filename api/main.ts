/**
 * Api process: the composition root. Builds the clients, injects them into the app,
 * listens at once, then starts up: /healthz answers from the first moment, /readyz
 * says "starting" (503) until the results subscription is live and MongoDB has
 * answered, and creates are refused with 503 until then. Slow dependencies never keep
 * the port closed, and index creation runs in the background. Shuts down cleanly on
 * SIGTERM: stop accepting connections, let in-flight requests finish (they may be
 * waiting for a create job), then close the clients, each step on its own.
 */
import { redisOperatorHealth } from '../common/operator-status.js';
import { ObjectWrites } from './object-writes.js';
import { AdminFailures } from './admin-failures.js';
import { createServer, type ServerResponse } from 'node:http';
import { ApiKeyCache } from '../common/api-keys.js';
import { loadConfig } from '../common/config.js';
import { resolveStoreProfile } from '../common/store-profile.js';
import { IdGenerator } from '../common/ids.js';
import { ANSWER_KEY_ID, openQueues, revocationsChannel } from '../common/jobs.js';
import { Seal } from '../common/seal.js';
import { createLogger, logQueueErrors } from '../common/logger.js';
import { connect, ensureIndexes, openMongo, untilDone } from '../common/mongo.js';
import { closeRedis, runEntryPoint, runShutdownSteps, stopOnSignals, type ShutdownStep } from '../common/shutdown.js';
import { createRegistry, httpMetrics, jobTallyKey, mongoCommandMetrics, queueDepthMetric, sharedJobMetrics } from '../common/metrics.js';
import { createRedis, onClusterChange, redisTarget } from '../common/redis.js';
import { queueLayout, shardsOf } from '../common/queue-shards.js';
import { CreateAdmission } from './admission.js';
import { createApi } from './app.js';
import { answerClientErrors, MAX_HEADER_BYTES } from './client-errors.js';
import type { AppDeps } from './context.js';
import { dashboardRouter } from './routes/dashboard.js';
import { metricsRouter } from './routes/metrics.js';
import { ResultWaiter } from './result-waiter.js';

/** An address of this machine that reaches a server listening on `host`. */
function loopbackFor(host: string): string {
  if (host === '' || host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'api');
  const mongo = openMongo(config.mongodbUrl, config.mongodbDb, 'payments-api', undefined, { monitorCommands: true });
  // /readyz asks whether MongoDB answers, on a connection of its own: through the
  // request pool its ping would wait behind every slow query and time out the probe
  // of a process that is working.
  const health = openMongo(config.mongodbUrl, config.mongodbDb, 'payments-api-health', 1);
  const redis = createRedis(redisTarget(config), 'failFast', 'api');
  const subscriber = createRedis(redisTarget(config), 'patient', 'api-subscriber');
  const queueConnection = createRedis(redisTarget(config), 'failFast', 'api-queues');
  const queues = openQueues({ connection: queueConnection, prefix: config.queuePrefix }, queueLayout(config));
  // Every BullMQ queue, each shard of a sharded one (common/queue-shards.ts): the dashboard and the depth metric show them.
  const queueList = Object.values(queues).flatMap(shardsOf);
  logQueueErrors(queueList, logger);
  const now = Date.now;
  const keys = new ApiKeyCache(mongo.collections, config.apiKeyCacheMs, now, config.apiKeyNegativeCacheMs);
  // Every answer comes sealed (worker/processors/create.ts).
  const answerSeal = new Seal(mongo.collections.serviceKeys, ANSWER_KEY_ID, { reloadMs: config.serviceKeysReloadMs });
  const results = new ResultWaiter(subscriber, config.queuePrefix, (jobId, sealed) => answerSeal.open(jobId, sealed));
  const revocations = revocationsChannel(config.queuePrefix);
  subscriber.on('message', (channel: string, hash: string) => {
    if (channel === revocations) keys.evict(hash);
  });
  // While unsubscribed, revocations may be missed: forget every cached key.
  subscriber.on('ready', () => keys.clear());
  // On a cluster the subscription moves to another node when its node is lost: the
  // same as a reconnect (results published meanwhile are asked for again).
  onClusterChange(subscriber, () => {
    keys.clear();
    void results.recheckAll();
  });
  let started = false;
  const admission = new CreateAdmission(queues.writes, { limitMs: config.createAdmissionWaitMs, now });

  const registry = createRegistry('api');
  const http = httpMetrics(registry);
  queueDepthMetric(registry, queueList);
  sharedJobMetrics(registry, redis, jobTallyKey(config.queuePrefix));
  mongoCommandMetrics(registry, mongo.client);
  const adminFailures = new AdminFailures(redis, config.queuePrefix, logger, registry);
  // Where the portal reaches this process's `/v1` (api/portal/v1-client.ts): set once it listens.
  let selfUrl: string | null = null;
  const deps: AppDeps = {
    config, redis, queues, results, mongo, keys, logger, ids: new IdGenerator(now), now,
    started: () => started, admission,
    objectWrites: new ObjectWrites(redis, config.queuePrefix, config.objectWritesInFlight),
    adminFailures,
    // connect first: a client whose first connection failed (MongoDB stalled when the
    // first probe came) stays closed until connect is called again.
    pingMongo: async () => {
      await connect(health);
      return health.db.command({ ping: 1 });
    },
    extraRouters: [metricsRouter(registry), dashboardRouter(config.adminToken, queueList, config.publicBaseUrl, adminFailures)],
    onRequest: (info) => http.observe(info),
    selfUrl: () => selfUrl,
    operatorHealth: redisOperatorHealth(redis, config.queuePrefix, now),
  };
  const listener = createApi(deps);
  let shuttingDown = false;
  // Answers still being written. From SIGTERM on, every answer (those in flight
  // included) closes its connection, so clients stop reusing connections the api
  // is about to drop and the drain ends with the last in-flight request.
  const answering = new Set<ServerResponse>();
  // Slow clients: the headers within headersTimeout, the whole request within
  // requestTimeout (checked every second), and at most maxConnections at once.
  const serverOptions = {
    headersTimeout: config.http.headersTimeoutMs,
    requestTimeout: config.http.requestTimeoutMs,
    connectionsCheckingInterval: 1000,
    maxHeaderSize: MAX_HEADER_BYTES,
  };
  const server = createServer(serverOptions, (req, res) => {
    if (shuttingDown) res.shouldKeepAlive = false;
    answering.add(res);
    res.once('close', () => answering.delete(res));
    listener(req, res);
  });
  // What the HTTP parser refuses is answered with a Request-Id and the error envelope.
  server.on('clientError', answerClientErrors({ config, ids: deps.ids, logger }));
  server.keepAliveTimeout = 65_000;
  server.maxConnections = config.http.maxConnections;
  // A port in use or a HOST that is no address of this machine stops the start with
  // its reason, as a bad setting does, not with an unhandled 'error' event.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  logger.info({ url: `http://${config.host}:${port}` }, 'api listening');
  selfUrl = `http://${loopbackFor(config.host)}:${port}`;

  stopOnSignals(async (signal) => {
    shuttingDown = true;
    for (const res of answering) res.shouldKeepAlive = false;
    logger.info({ signal, in_flight: answering.size }, 'api stopping: finishing in-flight requests');
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const grace = setTimeout(() => server.closeAllConnections(), config.writeTimeoutMs + 5000);
    await closed;
    clearTimeout(grace);
    admission.stop();
    await runShutdownSteps(
      [
        ['results', () => results.close()],
        ...queueList.map((q): ShutdownStep => [`queue ${q.name}`, () => q.close()]),
        ['redis (queues)', () => closeRedis(queueConnection)],
        ['redis', () => closeRedis(redis)],
        ['mongodb', () => mongo.client.close()],
        ['mongodb (health)', () => health.client.close()],
      ],
      logger,
      // Redis out of reach (down, or never reached since the start): nothing waits on it.
      () => queueConnection.status !== 'ready' || redis.status !== 'ready',
    );
    logger.info('api stopped');
    process.exit(0);
  });

  // Start-up, after listening. The patient subscriber waits for Redis by itself.
  const failed = (what: string) => (err: Error, failures: number) => {
    if (failures === 1 || failures % 10 === 0) logger.warn({ err: err.message, failures }, `${what}: retrying`);
  };
  await Promise.all([
    results.start(),
    subscriber.subscribe(revocations),
    untilDone(async () => {
      await connect(mongo);
      await mongo.db.command({ ping: 1 });
    }, failed('MongoDB not answering')),
  ]);
  started = true;
  admission.start();
  logger.info('api ready');
  // Indexes serve queries and guard unique fields (the worker, which inserts, makes
  // sure of them before it takes jobs); the api never waits for them.
  void untilDone(async () => ensureIndexes(mongo, await resolveStoreProfile(config.storeProfile, mongo.db)), failed('index check'));
}

runEntryPoint('api', import.meta.url, main);
