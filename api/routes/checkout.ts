/**
 * Test mode's checkout page for the redirect flow (wave): where
 * `next_action.redirect_to_url.url` leads. Plain HTML, no script and no external
 * asset; its buttons are forms. Pay, Decline and Cancel each enqueue the payer's
 * answer as an operator-outcome job, exactly as an operator's callback would be, and
 * the worker applies it to the intent (a Pay then follows the phone number's magic
 * suffix, as every simulated payment does).
 *
 * The token is `<payment intent id>.<32 random base62 characters>`: the id finds the
 * intent by `_id`, the random part (about 190 bits) makes the URL unguessable. Live
 * intents have no such page. The token stays on the intent once its attempt ended, so
 * a reload shows how the payment ended (succeeded, declined, canceled, expired); it
 * acts only while its own attempt waits for the payer (`requires_action`): a new
 * attempt has a token of its own, or none. The page never shows the client secret or
 * the full phone number.
 *
 * The payer's answer sends the browser to `return_url` with `payment_intent` and
 * `payment_intent_client_secret` added to its query, as Stripe's redirects do; a
 * press on a link whose attempt is over comes back to the page instead.
 */
import { timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import { JOBS, outcomePriority } from '../../common/jobs.js';
import type { PaymentIntentDoc } from '../../common/documents.js';
import { formatAmount } from '../../common/money.js';
import { returnUrlFor } from '../../common/return-url.js';
import type { AppDeps, Ctx, State } from '../context.js';

const ACTIONS = ['pay', 'decline', 'cancel'] as const;
type Action = (typeof ACTIONS)[number];

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function page(title: string, body: string, refresh = false): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
${refresh ? '<meta http-equiv="refresh" content="1">' : ''}<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a}
.box{border:1px solid #ddd;border-radius:8px;padding:1.5rem}.amount{font-size:2rem;font-weight:600}
.test{background:#fff3cd;border-radius:4px;padding:.25rem .5rem;font-size:.8rem}
form{display:inline}button{font-size:1rem;padding:.6rem 1.2rem;margin:.5rem .5rem 0 0;border-radius:6px;border:1px solid #888;cursor:pointer}
button.pay{background:#1d4ed8;color:#fff;border-color:#1d4ed8}</style></head>
<body><div class="box"><span class="test">TEST MODE</span>${body}</div></body></html>`;
}

function describe(doc: PaymentIntentDoc): string {
  return `<h1>Wave checkout</h1><p class="amount">${escapeHtml(formatAmount(doc.amount, doc.currency))}</p>
<p>Payer: ${escapeHtml(doc.payment?.phone_masked ?? '')}</p>${doc.description ? `<p>${escapeHtml(doc.description)}</p>` : ''}`;
}

/** How the attempt stands, in the payer's words: the heading and the status word (also the element's `data-status`). */
function outcome(doc: PaymentIntentDoc): { heading: string; status: string; detail: string } {
  switch (doc.status) {
    case 'succeeded':
      return { heading: 'Payment succeeded', status: 'succeeded', detail: 'The payment is complete. You can close this page.' };
    case 'canceled':
      return { heading: 'Payment canceled', status: 'canceled', detail: 'This payment was canceled. Nothing was charged.' };
    case 'expired':
      return { heading: 'Checkout expired', status: 'expired', detail: 'This payment expired before it was completed. Nothing was charged.' };
    case 'processing':
      return { heading: 'Payment processing', status: 'processing', detail: 'The operator is processing the payment. This page refreshes itself.' };
    default: {
      const declined = doc.last_payment_error;
      if (declined) {
        const why = declined.operator_decline_code ? ` (${declined.operator_decline_code.replaceAll('_', ' ')})` : '';
        return { heading: 'Payment declined', status: 'declined', detail: `The payment was declined${why}. Nothing was charged.` };
      }
      return { heading: `Status: ${doc.status}`, status: doc.status, detail: '' };
    }
  }
}

export function checkoutRouter(deps: AppDeps): Router<State> {
  const router = new Router<State>();
  const c = deps.mongo.collections.paymentIntents;

  /** The intent the token belongs to, or null (unknown, live, or another attempt's token). */
  async function find(token: string): Promise<PaymentIntentDoc | null> {
    const dot = token.indexOf('.');
    if (dot <= 0 || token.length > 200) return null;
    const doc = await c.findOne({ _id: token.slice(0, dot) }, { projection: { history: 0, created_event: 0 } });
    if (!doc || doc.livemode || !doc.payment?.checkout_token || !sameToken(doc.payment.checkout_token, token)) return null;
    return doc;
  }

  function notFound(ctx: Ctx): void {
    ctx.status = 404;
    ctx.type = 'html';
    ctx.body = page('Checkout not found', '<h1>Checkout not found</h1><p>This checkout link is unknown or no longer valid.</p>');
  }

  router.get('/test/checkout/:token', async (ctx) => {
    const token = ctx.params.token as string;
    const doc = await find(token);
    if (!doc) return notFound(ctx);
    ctx.type = 'html';
    ctx.set('Cache-Control', 'no-store');
    if (doc.status !== 'requires_action') {
      const now = outcome(doc);
      ctx.body = page(
        now.heading,
        `${describe(doc)}<h2 id="status" data-status="${escapeHtml(now.status)}">${escapeHtml(now.heading)}</h2>${now.detail ? `<p>${escapeHtml(now.detail)}</p>` : ''}`,
        doc.status === 'processing',
      );
      return;
    }
    const button = (action: Action, label: string, cls = '') =>
      `<form method="post" action="/test/checkout/${encodeURIComponent(token)}/${action}"><button type="submit" class="${cls}" id="${action}">${label}</button></form>`;
    ctx.body = page(
      'Checkout',
      `${describe(doc)}<p>Choose what the payer does.</p>${button('pay', 'Pay', 'pay')}${button('decline', 'Decline')}${button('cancel', 'Cancel')}`,
    );
  });

  router.post('/test/checkout/:token/:action', async (ctx) => {
    const token = ctx.params.token as string;
    const action = ctx.params.action as Action;
    if (!(ACTIONS as readonly string[]).includes(action)) return notFound(ctx);
    const doc = await find(token);
    if (!doc) return notFound(ctx);
    if (doc.status === 'requires_action') {
      const attempt = doc.attempt ?? 0;
      // One answer per attempt: a second click (or a reload of the POST) adds nothing.
      await deps.queues.intents.add(
        JOBS.operatorOutcome,
        { paymentIntent: doc._id, project: doc.project, livemode: doc.livemode, attempt, step: 'payer', action },
        { ...outcomePriority('payer'), jobId: `checkout-${doc._id}-${attempt}`, attempts: 1000, backoff: { type: 'capped' }, removeOnComplete: { age: 3600 }, removeOnFail: { age: 7 * 24 * 3600 } },
      );
    }
    ctx.status = 303;
    // Back to the merchant only from the payer's answer: a press on a spent link (its
    // token lives on) gets the page with the outcome, never the client secret again.
    const returnUrl = doc.status === 'requires_action' ? doc.payment?.return_url : null;
    ctx.redirect(returnUrl ? returnUrlFor(returnUrl, { id: doc._id, clientSecret: doc.client_secret }) : `/test/checkout/${encodeURIComponent(token)}`);
  });

  return router;
}
