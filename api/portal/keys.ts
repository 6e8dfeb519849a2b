/** API keys: list, create, roll. A new secret is shown once, in the answer to the write that made it. */
import { badge, esc, page, table, when, writeForm, type Notice } from './html.js';
import type { PortalAnswer, PortalRequest, PortalRoutes } from './router.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- /v1 JSON
type Json = any;

async function keysPage(req: PortalRequest, notice: Notice = {}, secret: string | null = null): Promise<PortalAnswer> {
  const res = await req.v1.get('/v1/api_keys', { limit: 100 });
  const data: Json[] = res.status === 200 ? res.body.data : [];
  const rows = data.map((k) => [
    `<span class="id">${esc(k.id)}</span>${k.id === req.session.keyId ? ' (this session)' : ''}`,
    `…${esc(k.last4)}`,
    k.revoked_at === null ? badge('active') : badge('revoked'),
    when(k.created),
    k.revoked_at === null
      ? writeForm(req.frame, `/portal/keys/${esc(k.id)}/roll`, `<button type="submit" class="secondary" id="roll-${esc(k.id)}" data-confirm="Roll this key? It stops working at once.">Roll</button>`, 'class="inline"')
      : when(k.revoked_at),
  ]);
  const shown = secret ? `<p>The new secret key, shown this once: store it now.</p><p class="secret" id="new-secret">${esc(secret)}</p>` : '';
  const create = writeForm(req.frame, '/portal/keys', '<button type="submit" id="create-key">Create a key</button>', 'class="card"');
  return { html: page('API keys', `${shown}${table(['Key', 'Ends with', 'Status', 'Created', 'Roll / revoked'], rows)}${create}`, { frame: req.frame, active: '/portal/keys', notice: { ...notice, error: notice.error ?? res.error } }) };
}

export function keyPages(routes: PortalRoutes): void {
  routes.get('/keys', (req) => keysPage(req));
  routes.post('/keys', async (req) => {
    const res = await req.v1.post('/v1/api_keys', {}, req.idempotencyKey);
    return res.status === 200 ? keysPage(req, { ok: `Key ${res.body.id} created.` }, res.body.secret) : keysPage(req, { error: res.error });
  });
  routes.post('/keys/:id/roll', async (req) => {
    const id = req.params.id as string;
    const res = await req.v1.post(`/v1/api_keys/${encodeURIComponent(id)}/roll`, {}, req.idempotencyKey);
    if (res.status !== 200) return keysPage(req, { error: res.error });
    // The session's own key: the session goes on with the new one.
    if (id === req.session.keyId) {
      await req.replaceKey({ keyId: res.body.id, secret: res.body.secret });
      req.v1.useSecret(res.body.secret);
      req.session.keyId = res.body.id;
    }
    return keysPage(req, { ok: `Key ${id} rolled: it is revoked, and ${res.body.id} replaces it.` }, res.body.secret);
  });
}
