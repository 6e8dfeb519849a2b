import Router from '@koa/router';
import { ERROR_CODES } from '../../common/errors.js';
import { DECLINE_CODES } from '../../common/lifecycle.js';
import type { AppDeps, State } from '../context.js';
import { sendJson } from '../respond.js';

async function check(probe: () => Promise<unknown>, timeoutMs = 1500): Promise<'ok' | 'unavailable'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      probe(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      }),
    ]);
    return 'ok';
  } catch {
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** The error reference that every `doc_url` points into. */
export function errorsPage(): string {
  const rows = Object.entries(ERROR_CODES)
    .map(
      ([code, info]) =>
        `<tr id="${code}"><td><a href="#${code}"><code>${code}</code></a></td><td>${info.status}</td><td><code>${info.type}</code></td><td>${escapeHtml(info.description).replace(/`([^`]+)`/g, '<code>$1</code>')}</td></tr>`,
    )
    .join('\n');
  // DESIGN.md section 7: the operators' reasons, normalised, are listed here too.
  const declines = Object.entries(DECLINE_CODES)
    .map(([code, message]) => `<tr id="${code}"><td><a href="#${code}"><code>${code}</code></a></td><td>${escapeHtml(message)}</td></tr>`)
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Error codes</title>
<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:.4rem .6rem;text-align:left;vertical-align:top}tr:target{background:#fff6d5}</style>
</head><body>
<h1>Error codes</h1>
<p>Every error answer has the body <code>{"error": {"type", "code", "message", "param"?, "request_id", "doc_url"}}</code>. <code>param</code> names the input at fault, when there is one. Quote <code>request_id</code> when you contact support.</p>
<table><thead><tr><th>code</th><th>HTTP</th><th>type</th><th>meaning</th></tr></thead><tbody>
${rows}
</tbody></table>
<h2 id="operator_decline_code">Operator decline codes</h2>
<p>A <code>payment_declined</code> error (402), and a payment intent's <code>last_payment_error</code>, carry <code>operator_decline_code</code>: the operator's own reason (MTN MoMo, M-Pesa, Airtel Money, Wave, Orange Money), normalised to one of these.</p>
<table><thead><tr><th>operator_decline_code</th><th>meaning</th></tr></thead><tbody>
${declines}
</tbody></table></body></html>`;
}

/** Health, readiness and the error reference: no API key needed. */
export function opsRouter(deps: AppDeps): Router<State> {
  const router = new Router<State>();
  const page = errorsPage();

  router.get('/healthz', (ctx) => {
    sendJson(ctx, JSON.stringify({ status: 'ok' }));
  });

  // Ready: started (see AppDeps.started) and both dependencies answering now.
  router.get('/readyz', async (ctx) => {
    const [redis, mongodb] = await Promise.all([
      check(() => deps.redis.ping()),
      check(() => (deps.pingMongo ? deps.pingMongo() : deps.mongo.db.command({ ping: 1 }))),
    ]);
    const started = deps.started?.() ?? true;
    const ready = started && redis === 'ok' && mongodb === 'ok';
    const status = ready ? 'ready' : started ? 'unavailable' : 'starting';
    if (!ready) ctx.set('Retry-After', '1');
    sendJson(ctx, JSON.stringify({ status, checks: { redis, mongodb } }), ready ? 200 : 503);
  });

  router.get('/docs/errors', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = page;
  });

  return router;
}
