/**
 * The API reference, without a key: `GET /openapi.json` (the OpenAPI document) and
 * `GET /docs` (that document rendered by Redoc). Redoc's standalone bundle is served
 * from node_modules, so the page works offline and fetches nothing from elsewhere.
 * The document's `servers` and code samples carry the service's own base URL:
 * `PUBLIC_BASE_URL`, else the origin the document is asked on.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import Router from '@koa/router';
import type { AppDeps, State } from '../context.js';
import { buildOpenApiDocument, OPENAPI_PATH } from '../openapi/document.js';
import { sdkClientOptions } from '../openapi/payment-intents.js';
import { baseUrlOf, sendJson } from '../respond.js';

export const DOCS_PATH = '/docs';
const REDOC_PATH = '/docs/assets/redoc.standalone.js';

/**
 * Redoc's menu footer shows a logo loaded from Redocly's CDN, with no option to turn
 * it off: an empty inline image stands in for it, so the page makes no request
 * elsewhere (the "API docs by Redocly" link stays).
 */
const REDOC_CDN_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
const EMPTY_IMAGE = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/%3E";

async function readRedoc(file: string): Promise<Buffer> {
  const bundle = await readFile(file, 'utf8');
  return Buffer.from(bundle.replaceAll(REDOC_CDN_LOGO, EMPTY_IMAGE));
}

/** Redoc's options, as attributes of its element: the tags open, the JSON samples expanded two levels. */
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Payments API reference</title>
<style>
body{margin:0;font-family:system-ui,sans-serif}
nav{display:flex;gap:1.5rem;align-items:center;padding:.6rem 1.2rem;border-bottom:1px solid #e4e4e4;font-size:.9rem}
nav strong{margin-right:auto}
nav a{color:#32329f;text-decoration:none}
</style>
</head>
<body>
<nav><strong>Payments API</strong><a href="/docs/errors">Error codes</a><a href="${OPENAPI_PATH}">OpenAPI document</a></nav>
<redoc spec-url="${OPENAPI_PATH}" expand-responses="200" json-sample-expand-level="2" path-in-middle-panel="true"></redoc>
<script src="${REDOC_PATH}"></script>
</body>
</html>
`;

/** Built once with this base URL; each request's own is put in its place (the build takes milliseconds, this a fraction). */
const PLACEHOLDER_BASE_URL = 'https://base-url.invalid';

/** `text` as it appears inside a JSON string. */
const inJson = (text: string) => JSON.stringify(text).slice(1, -1);

/**
 * The OpenAPI document's JSON for a base URL: `servers` and the code samples carry it.
 * With `PUBLIC_BASE_URL` it is one string; else it follows the origin asked on.
 */
function documentJson(config: AppDeps['config']): (baseUrl: string) => string {
  const template = JSON.stringify(buildOpenApiDocument(config, PLACEHOLDER_BASE_URL));
  const parts = template.split(inJson(sdkClientOptions(PLACEHOLDER_BASE_URL))).map((part) => part.split(PLACEHOLDER_BASE_URL));
  const fill = (baseUrl: string) => {
    const base = baseUrl.replace(/\/+$/, '');
    return parts.map((part) => part.join(inJson(base))).join(inJson(sdkClientOptions(base)));
  };
  if (config.publicBaseUrl !== null) {
    const pinned = fill(config.publicBaseUrl);
    return () => pinned;
  }
  return fill;
}

export function referenceRouter(deps: AppDeps): Router<State> {
  const router = new Router<State>();
  const documentFor = documentJson(deps.config);
  const require = createRequire(import.meta.url);
  let redoc: Promise<Buffer> | null = null;

  router.get(OPENAPI_PATH, (ctx) => {
    sendJson(ctx, documentFor(baseUrlOf(deps.config, ctx)));
  });

  router.get(DOCS_PATH, (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });

  router.get(REDOC_PATH, async (ctx) => {
    // Read once, on first use: 1 MB that most api processes never serve.
    redoc ??= readRedoc(require.resolve('redoc/bundles/redoc.standalone.js')).catch((err: unknown) => {
      redoc = null;
      throw err;
    });
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = await redoc;
  });

  return router;
}
