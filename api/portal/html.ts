/**
 * The portal's HTML: a layout with the mode on every page, and the small helpers the
 * pages share. Every value from the API is escaped; amounts are formatted by their
 * currency's exponent (common/money.ts); phone numbers arrive masked from `/v1`.
 * No inline script or style: the page's policy allows this origin's files only.
 */
import { randomBytes } from 'node:crypto';
import { formatAmount } from '../../common/money.js';

export function esc(text: unknown): string {
  return String(text ?? '').replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

export const money = (amount: number, currency: string) => esc(formatAmount(amount, currency));

/** Unix seconds, as a UTC date and time; the page's script shows it in the reader's time zone. */
export function when(unix: number | null | undefined): string {
  if (unix === null || unix === undefined) return '';
  const iso = new Date(unix * 1000).toISOString();
  return `<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

export const badge = (status: string) => `<span class="badge s-${esc(status)}">${esc(status.replaceAll('_', ' '))}</span>`;

export interface Frame {
  project: string;
  livemode: boolean;
  csrf: string;
}

/** The hidden fields of every write: the CSRF token, and a fresh nonce the write's idempotency key is made of. */
export function writeFields(frame: Frame): string {
  return `<input type="hidden" name="csrf" value="${esc(frame.csrf)}"><input type="hidden" name="nonce" value="${randomBytes(12).toString('base64url')}">`;
}

/** A form that writes: POST to `action`, with the hidden fields. */
export function writeForm(frame: Frame, action: string, inner: string, attrs = ''): string {
  return `<form method="post" action="${esc(action)}" ${attrs}>${writeFields(frame)}${inner}</form>`;
}

export function table(headers: string[], rows: string[][], empty = 'Nothing here yet.'): string {
  if (rows.length === 0) return `<p class="empty">${esc(empty)}</p>`;
  return `<div class="scroll"><table><thead><tr>${headers.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((cells) => `<tr>${cells.map((c, i) => `<td data-label="${esc(headers[i])}">${c}</td>`).join('')}</tr>`)
    .join('')}</tbody></table></div>`;
}

const NAV: Array<[string, string]> = [
  ['/portal/payments', 'Payments'],
  ['/portal/refunds', 'Refunds'],
  ['/portal/payouts', 'Payouts'],
  ['/portal/balance', 'Balance'],
  ['/portal/events', 'Events'],
  ['/portal/webhooks', 'Webhooks'],
  ['/portal/keys', 'API keys'],
];

export interface Notice {
  ok?: string | null;
  error?: string | null;
}

function notices(notice: Notice): string {
  return `${notice.ok ? `<p class="notice ok" role="status">${esc(notice.ok)}</p>` : ''}${notice.error ? `<p class="notice error" role="alert">${esc(notice.error)}</p>` : ''}`;
}

export function page(title: string, body: string, options: { frame?: Frame; active?: string; notice?: Notice } = {}): string {
  const { frame, active, notice = {} } = options;
  const mode = frame ? (frame.livemode ? 'live' : 'test') : null;
  const header = frame
    ? `<header class="top"><a class="brand" href="/portal/payments">Portal</a><span class="mode mode-${mode}" id="mode">${mode === 'live' ? 'LIVE MODE' : 'TEST MODE'}</span><span class="project">${esc(frame.project)}</span>${writeForm(frame, '/portal/sign-out', '<button type="submit" class="link" id="sign-out">Sign out</button>', 'class="signout"')}</header>
<nav>${NAV.map(([href, label]) => `<a href="${href}"${active === href ? ' aria-current="page"' : ''}>${label}</a>`).join('')}</nav>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} · Portal</title><link rel="stylesheet" href="/portal/assets/portal.css"><link rel="icon" href="/favicon.ico">
<script src="/portal/assets/portal.js" defer></script></head>
<body>${header}<main><h1>${esc(title)}</h1>${notices(notice)}${body}</main></body></html>`;
}

/** The portal's style sheet: small, one column below 640 px, tables that scroll inside their box. */
export const CSS = `*{box-sizing:border-box}body{margin:0;font:15px/1.45 system-ui,sans-serif;color:#1a1a1a;background:#fafafa}
main{max-width:72rem;margin:0 auto;padding:1rem}h1{font-size:1.4rem;margin:.5rem 0 1rem}h1,h2,p,label,dd{overflow-wrap:anywhere}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
.top{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;padding:.6rem 1rem;background:#111827;color:#fff}
.top a{color:#fff;text-decoration:none;font-weight:600}.project{opacity:.8;overflow-wrap:anywhere}.signout{margin-left:auto}
.mode{font-size:.75rem;font-weight:700;padding:.15rem .5rem;border-radius:4px}.mode-test{background:#fde68a;color:#78350f}.mode-live{background:#16a34a;color:#fff}
nav{display:flex;flex-wrap:wrap;gap:.25rem;padding:.4rem 1rem;background:#fff;border-bottom:1px solid #e5e7eb}
nav a{padding:.3rem .6rem;border-radius:4px;color:#1d4ed8;text-decoration:none}nav a[aria-current]{background:#dbeafe;font-weight:600}
.scroll{overflow-x:auto;max-width:100%;background:#fff;border:1px solid #e5e7eb;border-radius:6px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.45rem .6rem;border-bottom:1px solid #f0f0f0;vertical-align:top}
th{font-size:.8rem;color:#555;background:#f9fafb}td{overflow-wrap:anywhere}code,.id{font-family:ui-monospace,monospace;font-size:.85em;overflow-wrap:anywhere}
.badge{display:inline-block;font-size:.75rem;padding:.05rem .45rem;border-radius:999px;background:#e5e7eb}
.s-succeeded,.s-enabled,.s-paid,.s-ok{background:#dcfce7}.s-failed,.s-canceled,.s-disabled,.s-expired{background:#fee2e2}.s-pending,.s-processing,.s-requires_action,.s-in_transit,.s-enqueued{background:#fef3c7}
form.inline{display:inline}form.filters,form.card{display:flex;flex-wrap:wrap;gap:.5rem;align-items:flex-end;margin:0 0 1rem}
label{display:flex;flex-direction:column;font-size:.8rem;color:#444;gap:.15rem;max-width:100%}
input,select,textarea,button{font:inherit;padding:.35rem .5rem;border:1px solid #bbb;border-radius:4px;max-width:100%}
textarea{width:100%;min-height:6rem}button{background:#1d4ed8;color:#fff;border-color:#1d4ed8;cursor:pointer}
button.secondary{background:#fff;color:#1d4ed8}button.danger{background:#b91c1c;border-color:#b91c1c}button.link{background:none;border:none;color:#fff;text-decoration:underline;padding:0}
.notice{padding:.6rem .8rem;border-radius:6px}.ok{background:#dcfce7}.error{background:#fee2e2}
.secret{font-family:ui-monospace,monospace;background:#fff7ed;border:1px dashed #f97316;padding:.5rem;overflow-wrap:anywhere}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;background:#fff;border:1px solid #e5e7eb;border-radius:6px;padding:.75rem}
dl.facts dt{color:#555}dl.facts dd{margin:0;overflow-wrap:anywhere}.pager{display:flex;gap:1rem;margin:.75rem 0}.empty{color:#666}
ol.timeline{list-style:none;padding:0;margin:0;background:#fff;border:1px solid #e5e7eb;border-radius:6px}ol.timeline li{padding:.45rem .75rem;border-bottom:1px solid #f0f0f0}
.signin{max-width:26rem;margin:3rem auto}.signin form{flex-direction:column;align-items:stretch}
@media (max-width:640px){main{padding:.75rem}dl.facts{grid-template-columns:1fr}dl.facts dd{margin-bottom:.4rem}
thead{display:none}table,tbody,tr,td{display:block;width:100%}tr{border-bottom:1px solid #e5e7eb;padding:.3rem 0}td{border:none;padding:.15rem .6rem}
td::before{content:attr(data-label);display:block;font-size:.7rem;color:#666}}
`;
