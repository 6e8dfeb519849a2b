/**
 * Live operators' callbacks (DESIGN.md section 12; docs/payments.md, "Live
 * operators"). No API key: the operators call them. A callback carries no
 * authority: it only says "look again". A route records what a genuine M-Pesa
 * callback proves (worker/operators/<operator>/callbacks.ts) and enqueues a check of the attempt
 * it names (`payment_intent.operator_check.v1`, n `cb`, one job id per attempt, so
 * repeats that arrive together are one check); the worker asks the operator and
 * applies only that answer (worker/processors/operator-check.ts).
 *
 * - `PUT|POST /operators/mtn_momo/callback`: MTN's, unsigned; its `externalId` names
 *   the attempt, or the payout (a Disbursement transfer's). A refund's callback
 *   enqueues nothing: its polls read it.
 * - `POST /operators/mpesa/callback?attempt=…&t=…`: Daraja's STK callback, unsigned;
 *   the token in the URL we gave proves that Safaricom saw it.
 * - `POST /operators/mpesa/result?refund=…&t=…`: the reversal's `Result` (its
 *   ResultURL and QueueTimeOutURL), recorded for the refund's polls when it names the
 *   conversation Daraja gave that refund; `?status=…&t=…`: a Transaction Status
 *   `Result` (a receipt, a reversal's fate), recorded for the same polls; `?payout=…&t=…`:
 *   a B2C payout's `Result`, recorded for the payout's polls (worker/payouts/process.ts).
 * - A payout's callback brings its next look forward (`lookAtPayout`): the step job
 *   waiting on the poll schedule runs now, and reads the operator's answer.
 * - The M-Pesa tokens are keyed with the service key `operator-callbacks`, not an
 *   operator credential (DESIGN section 14).
 * - `POST /operators/wave/webhook`: applied only when `Wave-Signature` verifies
 *   (401 otherwise, without detail).
 * - `GET /operators/wave/return`: where Wave sends a payer back when the merchant
 *   gave no `return_url`.
 *
 * Unknown, late, repeated and forged callbacks change nothing, and get the answer a
 * genuine one gets, as fast: the answer never waits on whether a reference exists.
 */
import Router from '@koa/router';
import getRawBody from 'raw-body';
import { JOBS, operatorCheckJobId, parseAttemptId } from '../../common/jobs.js';
import { PAYOUT_LOOK_HINT_MS, payoutLookKey, payoutStepJobId } from '../../common/payouts.js';
import { ServiceKeyring } from '../../common/service-keys.js';
import { CALLBACK_KEY_ID, recordB2cResult, recordReversalResult, recordStkCallback, recordTransactionStatus } from '../../worker/operators/mpesa/callbacks.js';
import { parseWaveWebhook, verifyWaveSignature } from '../../worker/operators/wave/callbacks.js';
import type { AppDeps, Ctx, State } from '../context.js';
import { BODY_LIMIT } from '../middleware/body.js';
import { sendJson } from '../respond.js';

const MPESA_ACCEPTED = JSON.stringify({ ResultCode: 0, ResultDesc: 'Accepted' });
const PAYOUT_ID = /^po_[0-9A-Za-z]{1,64}$/;

async function rawBody(ctx: Ctx): Promise<string | null> {
  try {
    return await getRawBody(ctx.req, { limit: BODY_LIMIT, encoding: 'utf8' });
  } catch {
    return null;
  }
}

function json(text: string | null): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export function operatorCallbacksRouter(deps: AppDeps): Router<State> {
  const router = new Router<State>();
  const accounts = deps.config.liveOperators.accounts;
  const has = (operator: string) => accounts.some((a) => a.operator === operator);
  const waveSecrets = accounts.flatMap((a) => (a.operator === 'wave' ? [a.config.webhookSecret] : []));
  // Every version held verifies: a URL made before a rotation still does.
  const callbackKeys = new ServiceKeyring(deps.mongo.collections.serviceKeys, CALLBACK_KEY_ID, { reloadMs: deps.config.serviceKeysReloadMs });
  const verifying = async () => (await callbackKeys.all()).map((v) => v.key);

  /**
   * "Look again" at the attempt that `attemptId` names, if it is shaped as one of ours:
   * at most once per attempt per `CALLBACK_CHECK_INTERVAL_MS` (DESIGN section 20), so
   * a flood of callbacks, genuine or not, costs the operator a status call or two
   * per interval, and the queue a job or two. A callback within the interval is not
   * dropped: one look is kept for the interval's end (a genuine answer right after a
   * forged callback is still read then).
   */
  async function lookAgain(attemptId: unknown): Promise<void> {
    const attempt = parseAttemptId(attemptId);
    if (!attempt) return;
    const jobId = operatorCheckJobId(attempt.paymentIntent, attempt.attempt, 'cb');
    const options = { attempts: 1000, backoff: { type: 'capped' }, removeOnComplete: true, removeOnFail: { age: 7 * 24 * 3600 } };
    const interval = deps.config.callbackCheckIntervalMs;
    if (interval > 0) {
      const gate = `${deps.config.queuePrefix}:callback-check:${attempt.paymentIntent}:${attempt.attempt}`;
      if ((await deps.redis.set(gate, '1', 'PX', interval, 'NX')) !== 'OK') {
        const left = Math.max(0, await deps.redis.pttl(gate));
        await deps.queues.intents.add(JOBS.operatorCheck, { ...attempt, n: 'cb' }, { ...options, jobId: `${jobId}-later`, delay: left });
        return;
      }
    }
    await deps.queues.intents.add(JOBS.operatorCheck, { ...attempt, n: 'cb' }, { ...options, jobId });
  }

  /**
   * "Look again" at the payout `payout` names, if it is shaped as one of ours and on
   * its way: its next step, waiting on the poll schedule, is run now (at most once per
   * payout per `CALLBACK_CHECK_INTERVAL_MS`). Not awaited by the route: the answer
   * never tells whether the payout exists.
   */
  async function lookAtPayout(payout: unknown): Promise<void> {
    if (typeof payout !== 'string' || !PAYOUT_ID.test(payout)) return;
    const interval = deps.config.callbackCheckIntervalMs;
    if (interval > 0 && (await deps.redis.set(`${deps.config.queuePrefix}:callback-check:${payout}`, '1', 'PX', interval, 'NX')) !== 'OK') return;
    // First the hint, for a step still running (it schedules the next look, then takes the hint); then the look already waiting.
    await deps.redis.set(payoutLookKey(deps.config.queuePrefix, payout), '1', 'PX', PAYOUT_LOOK_HINT_MS);
    const doc = await deps.mongo.collections.payouts.findOne({ _id: payout }, { projection: { status: 1, steps: 1 } });
    if (doc?.status !== 'in_transit') return;
    const step = await deps.queues.intents.getJob(payoutStepJobId(payout, doc.steps));
    // Running, or run meanwhile: that look is the one asked for.
    if (step && (await step.isDelayed())) await step.promote().catch(() => undefined);
  }
  const lookAtPayoutLater = (payout: unknown) =>
    void lookAtPayout(payout).catch((err: unknown) => deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'operator callback: the payout could not be looked at again; its polls go on'));

  const mtn = async (ctx: Ctx) => {
    const body = json(await rawBody(ctx));
    const externalId = body !== null && typeof body === 'object' ? (body as Record<string, unknown>).externalId : undefined;
    if (has('mtn_momo') && typeof externalId === 'string' && PAYOUT_ID.test(externalId)) lookAtPayoutLater(externalId);
    else if (has('mtn_momo') && body !== null && typeof body === 'object') await lookAgain(externalId);
    sendJson(ctx, '{}');
  };
  router.put('/operators/mtn_momo/callback', mtn);
  router.post('/operators/mtn_momo/callback', mtn);

  router.post('/operators/mpesa/callback', async (ctx) => {
    const body = json(await rawBody(ctx));
    if (has('mpesa')) {
      const query = { attempt: ctx.query.attempt as string | undefined, t: ctx.query.t as string | undefined };
      const recorded = await recordStkCallback(deps.mongo.db, await verifying(), query, body, deps.now());
      if (recorded) await lookAgain(recorded.attemptId);
    }
    sendJson(ctx, MPESA_ACCEPTED);
  });

  router.post('/operators/mpesa/result', async (ctx) => {
    const body = json(await rawBody(ctx));
    // A QueueTimeOutURL notice has no `Result`: nothing is recorded, the refund's polls go on.
    if (has('mpesa')) {
      const key = await verifying();
      const t = ctx.query.t as string | undefined;
      if (typeof ctx.query.status === 'string') await recordTransactionStatus(deps.mongo.db, key, { status: ctx.query.status, t }, body, deps.now());
      else if (typeof ctx.query.payout === 'string') {
        const recorded = await recordB2cResult(deps.mongo.db, key, { payout: ctx.query.payout, t }, body, deps.now());
        if (recorded) lookAtPayoutLater(recorded.payoutId);
      }
      else await recordReversalResult(deps.mongo.db, key, { refund: ctx.query.refund as string | undefined, t }, body, deps.now());
    }
    sendJson(ctx, MPESA_ACCEPTED);
  });

  router.post('/operators/wave/webhook', async (ctx) => {
    const raw = await rawBody(ctx);
    const signature = ctx.get('Wave-Signature') || undefined;
    // One secret per Wave account (business wallet): a webhook signed by any of them is Wave's.
    if (raw === null || !waveSecrets.some((secret) => verifyWaveSignature(secret, signature, raw, deps.now()) === 'ok')) {
      sendJson(ctx, JSON.stringify({ error: { type: 'invalid_request_error', message: 'The webhook signature could not be verified.' } }), 401);
      return;
    }
    const webhook = parseWaveWebhook(json(raw));
    if (webhook) await lookAgain(webhook.attemptId);
    sendJson(ctx, '{}');
  });

  router.get('/operators/wave/return', (ctx) => {
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = 'Your Wave payment is being processed. You can close this page.\n';
  });

  return router;
}
