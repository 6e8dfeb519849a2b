/** Events (each with its delivery attempts, and Resend) and webhook endpoints (create, disable, enable, rotate, test). */
import { badge, esc, page, table, when, writeForm, type Notice } from './html.js';
import { errorPage, type PortalAnswer, type PortalRequest, type PortalRoutes } from './router.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- /v1 JSON
type Json = any;

function attemptRows(data: Json[]): string[][] {
  return data.map((a) => [
    when(a.created),
    `<span class="id">${esc(a.webhook_endpoint)}</span>`,
    esc(a.attempt),
    a.succeeded ? badge('succeeded') : badge('failed'),
    esc(a.http_status ?? a.error ?? ''),
    `${esc(a.duration_ms)} ms`,
  ]);
}

const ATTEMPT_HEADERS = ['When', 'Endpoint', 'Attempt', 'Status', 'Response code', 'Latency'];

async function eventsPage(req: PortalRequest): Promise<PortalAnswer> {
  const after = req.query.get('after');
  const type = req.query.get('type') ?? '';
  const res = await req.v1.get('/v1/events', { limit: 25, type: type || null, starting_after: after && /^evt_[0-9A-Za-z]+$/.test(after) ? after : null });
  const data: Json[] = res.status === 200 ? res.body.data : [];
  const rows = data.map((e) => [`<a class="id" href="/portal/events/${esc(e.id)}">${esc(e.id)}</a>`, esc(e.type), `<span class="id">${esc(e.data?.object?.id ?? '')}</span>`, when(e.created)]);
  const last = data[data.length - 1];
  const more = res.status === 200 && res.body.has_more && last ? `<div class="pager"><a href="/portal/events?${esc(new URLSearchParams({ ...(type ? { type } : {}), after: last.id }).toString())}">Older →</a></div>` : '';
  const filter = `<form method="get" action="/portal/events" class="filters"><label>Type<input name="type" value="${esc(type)}" placeholder="refund.succeeded"></label><button type="submit">Filter</button></form>`;
  return { html: page('Events', filter + table(['Event', 'Type', 'Object', 'Created'], rows, 'No events yet.') + more, { frame: req.frame, active: '/portal/events', notice: { error: res.error } }) };
}

async function eventPage(req: PortalRequest, notice: Notice = {}): Promise<PortalAnswer> {
  const id = req.params.id as string;
  const res = await req.v1.get(`/v1/events/${encodeURIComponent(id)}`);
  if (res.status !== 200) return errorPage(req, 'Event', '/portal/events', { error: res.error }, res.status === 404 ? 404 : 200);
  const [attempts, endpoints] = await Promise.all([req.v1.get(`/v1/events/${encodeURIComponent(id)}/attempts`, { limit: 100 }), req.v1.get('/v1/webhook_endpoints', { limit: 100 })]);
  const e = res.body;
  const object = e.data?.object ?? {};
  const link = object.object === 'payment_intent' ? `<a class="id" href="/portal/payments/${esc(object.id)}">${esc(object.id)}</a>` : `<span class="id">${esc(object.id ?? '')}</span>`;
  const eps: Json[] = endpoints.status === 200 ? endpoints.body.data : [];
  const resend = eps.length
    ? writeForm(
        req.frame,
        `/portal/events/${esc(id)}/resend`,
        `<label>Endpoint<select name="endpoint" id="resend-endpoint">${eps.map((ep) => `<option value="${esc(ep.id)}">${esc(ep.url)}</option>`).join('')}</select></label><button type="submit" id="resend">Resend</button>`,
        'class="card"',
      )
    : '<p class="empty">No webhook endpoint to resend to.</p>';
  const body = `<dl class="facts"><dt>Id</dt><dd class="id">${esc(e.id)}</dd><dt>Type</dt><dd id="event-type">${esc(e.type)}</dd><dt>Object</dt><dd>${link}</dd><dt>Created</dt><dd>${when(e.created)}</dd></dl>
<h2>Delivery attempts</h2><div id="attempts">${table(ATTEMPT_HEADERS, attemptRows(attempts.status === 200 ? attempts.body.data : []), 'No delivery attempt.')}</div><h2>Resend</h2>${resend}`;
  return { html: page(`Event ${e.type}`, body, { frame: req.frame, active: '/portal/events', notice }) };
}

async function endpointsPage(req: PortalRequest, notice: Notice = {}, secret: string | null = null): Promise<PortalAnswer> {
  const res = await req.v1.get('/v1/webhook_endpoints', { limit: 100 });
  const data: Json[] = res.status === 200 ? res.body.data : [];
  const rows = data.map((ep) => [
    `<a class="id" href="/portal/webhooks/${esc(ep.id)}">${esc(ep.id)}</a>`,
    esc(ep.url),
    badge(ep.status),
    esc((ep.enabled_events ?? []).join(', ')),
    [
      writeForm(req.frame, `/portal/webhooks/${esc(ep.id)}/${ep.status === 'enabled' ? 'disable' : 'enable'}`, `<button type="submit" class="secondary">${ep.status === 'enabled' ? 'Disable' : 'Enable'}</button>`, 'class="inline"'),
      writeForm(req.frame, `/portal/webhooks/${esc(ep.id)}/rotate`, '<button type="submit" class="secondary" data-confirm="Rotate the signing secret? The old one keeps signing for 24 hours.">Rotate secret</button>', 'class="inline"'),
      writeForm(req.frame, `/portal/webhooks/${esc(ep.id)}/test`, '<button type="submit" class="secondary">Send test</button>', 'class="inline"'),
    ].join(' '),
  ]);
  const shown = secret ? `<p>The signing secret, shown this once:</p><p class="secret" id="secret">${esc(secret)}</p>` : '';
  const create = writeForm(
    req.frame,
    '/portal/webhooks',
    `<label>URL<input name="url" id="endpoint-url" type="url" required placeholder="https://example.com/webhooks"></label>
<label>Events (comma-separated; * for all)<input name="enabled_events" value="*"></label><button type="submit" id="create-endpoint">Add endpoint</button>`,
    'class="card"',
  );
  return { html: page('Webhook endpoints', `${shown}${table(['Endpoint', 'URL', 'Status', 'Events', 'Actions'], rows, 'No endpoints yet.')}<h2>Add an endpoint</h2>${create}`, { frame: req.frame, active: '/portal/webhooks', notice: { ...notice, error: notice.error ?? res.error } }) };
}

async function endpointPage(req: PortalRequest): Promise<PortalAnswer> {
  const id = req.params.id as string;
  const res = await req.v1.get(`/v1/webhook_endpoints/${encodeURIComponent(id)}`);
  if (res.status !== 200) return errorPage(req, 'Webhook endpoint', '/portal/webhooks', { error: res.error }, res.status === 404 ? 404 : 200);
  const attempts = await req.v1.get(`/v1/webhook_endpoints/${encodeURIComponent(id)}/attempts`, { limit: 50 });
  const ep = res.body;
  const rows = (attempts.status === 200 ? (attempts.body.data as Json[]) : []).map((a) => [when(a.created), `<a class="id" href="/portal/events/${esc(a.event)}">${esc(a.event)}</a>`, esc(a.attempt), a.succeeded ? badge('succeeded') : badge('failed'), esc(a.http_status ?? a.error ?? ''), `${esc(a.duration_ms)} ms`]);
  const body = `<dl class="facts"><dt>Id</dt><dd class="id">${esc(ep.id)}</dd><dt>URL</dt><dd>${esc(ep.url)}</dd><dt>Status</dt><dd>${badge(ep.status)}</dd><dt>Events</dt><dd>${esc((ep.enabled_events ?? []).join(', '))}</dd></dl>
<h2>Recent attempts</h2>${table(['When', 'Event', 'Attempt', 'Status', 'Response code', 'Latency'], rows, 'No attempts yet.')}`;
  return { html: page('Webhook endpoint', body, { frame: req.frame, active: '/portal/webhooks', notice: { error: attempts.error } }) };
}

export function webhookPages(routes: PortalRoutes): void {
  routes.get('/events', eventsPage);
  routes.get('/events/:id', (req) => eventPage(req));
  routes.post('/events/:id/resend', async (req) => {
    const endpoint = req.form.endpoint ?? '';
    const res = await req.v1.post(`/v1/webhook_endpoints/${encodeURIComponent(endpoint)}/resend`, { event: req.params.id }, req.idempotencyKey);
    return eventPage(req, res.status === 200 ? { ok: 'Sent again: the new attempt shows below once it is made.' } : { error: res.error });
  });
  routes.get('/webhooks', (req) => endpointsPage(req));
  routes.get('/webhooks/:id', endpointPage);
  routes.post('/webhooks', async (req) => {
    const events = (req.form.enabled_events ?? '*').split(',').map((s) => s.trim()).filter(Boolean);
    const res = await req.v1.post('/v1/webhook_endpoints', { url: req.form.url ?? '', enabled_events: events.length ? events : ['*'] }, req.idempotencyKey);
    return res.status === 200 ? endpointsPage(req, { ok: `Endpoint ${res.body.id} added.` }, res.body.secret) : endpointsPage(req, { error: res.error });
  });
  for (const [action, disabled] of [['disable', true], ['enable', false]] as const) {
    routes.post(`/webhooks/:id/${action}`, async (req) => {
      const res = await req.v1.post(`/v1/webhook_endpoints/${encodeURIComponent(req.params.id as string)}`, { disabled }, req.idempotencyKey);
      return endpointsPage(req, res.status === 200 ? { ok: `Endpoint ${res.body.id} ${res.body.status}.` } : { error: res.error });
    });
  }
  routes.post('/webhooks/:id/rotate', async (req) => {
    const res = await req.v1.post(`/v1/webhook_endpoints/${encodeURIComponent(req.params.id as string)}/rotate_secret`, {}, req.idempotencyKey);
    return res.status === 200 ? endpointsPage(req, { ok: 'Secret rotated: the previous one keeps signing for 24 hours.' }, res.body.secret) : endpointsPage(req, { error: res.error });
  });
  routes.post('/webhooks/:id/test', async (req) => {
    const res = await req.v1.post(`/v1/webhook_endpoints/${encodeURIComponent(req.params.id as string)}/test`, {}, req.idempotencyKey);
    if (res.status !== 200) return endpointsPage(req, { error: res.error });
    const a = res.body;
    return endpointsPage(req, a.succeeded ? { ok: `Test delivered: HTTP ${a.http_status} in ${a.duration_ms} ms.` } : { error: `Test not delivered: ${a.http_status ?? a.error} after ${a.duration_ms} ms.` });
  });
}
