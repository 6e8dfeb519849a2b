import Router from '@koa/router';
import { PROJECT_PATTERN } from '../../common/api-keys.js';
import { ApiError, errors } from '../../common/errors.js';
import { JOBS } from '../../common/jobs.js';
import { balanceId, ledgerKeyId, movementKeys } from '../../common/ledger.js';
import { isCurrency } from '../../common/money.js';
import { presentBalanceTransaction } from '../../common/presenters.js';
import type { AppDeps, State } from '../context.js';
import { adminAuth } from '../middleware/admin-auth.js';
import { parseBody } from '../middleware/body.js';
import { sendJson } from '../respond.js';
import { checkQueryNames } from '../schemas/query.js';

/** The largest adjustment either way, as a payment's largest amount. */
const MAX_ADJUSTMENT = 999_999_999_999;
const POLL_MS = 50;

interface AdjustmentInput {
  project: string;
  livemode: boolean;
  currency: string;
  amount: number;
  description: string | null;
  reference: string;
}

const FIELDS = ['project', 'livemode', 'currency', 'amount', 'description', 'reference'];

/** JSON, or a form whose values are strings. */
function parseAdjustment(given: Record<string, unknown>, encoding: 'json' | 'form' | undefined): AdjustmentInput {
  const body: Record<string, unknown> = { ...given };
  if (encoding === 'form') {
    if (body.livemode === 'true' || body.livemode === 'false') body.livemode = body.livemode === 'true';
    if (typeof body.amount === 'string' && /^-?[0-9]{1,13}$/.test(body.amount)) body.amount = Number(body.amount);
  }
  for (const name of Object.keys(body)) if (!FIELDS.includes(name)) throw errors.parameterUnknown(name);
  const { project, livemode = false, currency, amount, description = null, reference } = body;
  if (project === undefined) throw errors.parameterMissing('project');
  if (typeof project !== 'string' || !PROJECT_PATTERN.test(project)) throw errors.parameterInvalid('project', 'use 1 to 63 characters from a-z, 0-9, "_" and "-", starting with a letter or digit');
  if (typeof livemode !== 'boolean') throw new ApiError('parameter_invalid_boolean', 'Invalid boolean: livemode must be true or false.', 'livemode');
  if (currency === undefined) throw errors.parameterMissing('currency');
  if (typeof currency !== 'string' || !isCurrency(currency)) throw new ApiError('currency_invalid', 'Invalid currency: use a three-letter ISO 4217 code, such as "xof".', 'currency');
  if (amount === undefined) throw errors.parameterMissing('amount');
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount === 0 || Math.abs(amount) > MAX_ADJUSTMENT) {
    throw new ApiError('parameter_invalid_integer', `Invalid integer: amount must be a whole number of minor units, not 0, at most ${MAX_ADJUSTMENT} either way (negative takes money).`, 'amount');
  }
  if (description !== null && (typeof description !== 'string' || [...description].length > 1000 || description.includes('\u0000'))) {
    throw new ApiError('parameter_invalid_string', 'Invalid string: description must be at most 1000 characters, no NUL.', 'description');
  }
  if (reference === undefined) throw errors.parameterMissing('reference');
  if (typeof reference !== 'string' || !/^[\x21-\x7e]{1,255}$/.test(reference)) {
    throw new ApiError('parameter_invalid_string', 'Invalid string: reference is 1 to 255 printable ASCII characters, your own unique name for this adjustment.', 'reference');
  }
  return { project, livemode, currency: currency.toLowerCase(), amount, description: description as string | null, reference };
}

/**
 * Adjustments of a balance (DESIGN section 16): `POST /admin/v1/adjustments`, an
 * operator's correction posted as an `adjustment` transaction through the worker's
 * ledger (worker/balance/ledger.ts), like every other posting. `reference` is its
 * identity: the same reference again answers the first posting (with
 * `Idempotent-Replayed: true`), and a different request with it is refused
 * (`idempotency_key_reused`). Without `ADMIN_TOKEN` there are no routes (404).
 */
export function adminAdjustmentsRouter(deps: AppDeps): Router<State> {
  const router = new Router<State>();
  if (!deps.config.adminToken) return router;
  const c = deps.mongo.collections;
  const auth = adminAuth(deps.config.adminToken, deps.adminFailures);

  const posted = async (input: AdjustmentInput) => {
    const identity = await c.ledgerKeys.findOne({ _id: ledgerKeyId(balanceId(input, input.currency), movementKeys.adjustment(input.reference)) });
    return identity ? c.balanceTransactions.findOne({ _id: identity.txn }) : null;
  };

  router.post('/admin/v1/adjustments', auth, parseBody(), async (ctx) => {
    checkQueryNames(new URLSearchParams(ctx.querystring), []);
    const input = parseAdjustment(ctx.state.body ?? {}, ctx.state.bodyEncoding);
    const before = await posted(input);
    if (before) {
      if (before.amount !== input.amount || before.description !== input.description) throw errors.idempotencyKeyReused();
      ctx.set('Idempotent-Replayed', 'true');
      return sendJson(ctx, JSON.stringify(presentBalanceTransaction(before)));
    }
    const id = deps.ids.next('adjustment');
    await deps.queues.maintenance.add(JOBS.adjustBalance, { id, ...input }, { jobId: `adjustment-${id}`, attempts: 10, backoff: { type: 'exponential', delay: 200 }, removeOnComplete: true, removeOnFail: 100 });
    const deadline = deps.now() + deps.config.writeTimeoutMs;
    for (;;) {
      const txn = await posted(input);
      if (txn) return sendJson(ctx, JSON.stringify(presentBalanceTransaction(txn)));
      if (deps.now() > deadline) throw errors.processingTimeout();
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  });
  return router;
}
