/**
 * Every response a black-box test receives through `Service.request` is checked
 * against the OpenAPI document the api serves (`GET /openapi.json`): the status
 * must be documented for the operation, its required headers present, and a JSON
 * body valid against its schema. Response schemas are closed
 * (`additionalProperties: false`), so a field the document does not describe fails
 * the test. Paths outside the document (ops, admin, dashboard) are not checked;
 * an unknown path under `/v1` must still answer with a documented error envelope.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: its default export arrives wrapped under NodeNext.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

type Json = { [key: string]: unknown };

interface Route {
  template: string;
  pattern: RegExp;
  params: number;
}

interface Checker {
  doc: Json;
  routes: Route[];
  ajv: Ajv2020;
  validators: Map<string, ValidateFunction>;
}

const DOC_ID = 'openapi.json';
const checkers = new Map<string, Promise<Checker>>();

async function loadChecker(baseUrl: string): Promise<Checker> {
  const res = await fetch(`${baseUrl}/openapi.json`);
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
  const doc = (await res.json()) as Json;
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  addFormats(ajv);
  // The document is added whole, so that `#/components/...` references resolve; its
  // own top-level members are not schema keywords.
  ajv.addVocabulary(['openapi', 'info', 'jsonSchemaDialect', 'servers', 'security', 'tags', 'paths', 'components', 'webhooks', 'externalDocs']);
  ajv.addSchema(doc, DOC_ID);
  const routes = Object.keys(doc.paths as Json).map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
    params: (template.match(/\{/g) ?? []).length,
  }));
  // A literal path wins over a template that also matches it.
  routes.sort((a, b) => a.params - b.params);
  return { doc, routes, ajv, validators: new Map() };
}

function checkerFor(baseUrl: string): Promise<Checker> {
  let checker = checkers.get(baseUrl);
  if (!checker) {
    checker = loadChecker(baseUrl);
    checker.catch(() => checkers.delete(baseUrl));
    checkers.set(baseUrl, checker);
  }
  return checker;
}

const escapePointer = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');

function resolve(doc: Json, value: Json): { value: Json; pointer: string | null } {
  const target = value.$ref;
  if (typeof target !== 'string') return { value, pointer: null };
  const parts = target.replace(/^#\//, '').split('/').map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
  let node: unknown = doc;
  for (const part of parts) node = (node as Json)[part];
  return { value: node as Json, pointer: target.slice(1) };
}

function validatorAt(checker: Checker, pointer: string): ValidateFunction {
  let validate = checker.validators.get(pointer);
  if (!validate) {
    validate = checker.ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
    checker.validators.set(pointer, validate);
  }
  return validate;
}

export interface CheckedResponse {
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
}

function fail(what: string, method: string, path: string, res: CheckedResponse, detail = ''): never {
  throw new Error(`OpenAPI: ${method} ${path} → ${res.status}: ${what}${detail ? `\n${detail}` : ''}\nbody: ${res.text.slice(0, 500)}`);
}

/** The response object the document gives for this answer, and where it sits. */
function documentedResponse(checker: Checker, method: string, path: string, res: CheckedResponse): { response: Json; pointer: string } | null {
  const route = checker.routes.find((r) => r.pattern.test(path));
  const status = String(res.status);
  if (!route) {
    if (path !== '/v1' && !path.startsWith('/v1/')) return null;
    return errorResponse(checker, method, path, res, 'no such path in the document');
  }
  const operation = (checker.doc.paths as Json)[route.template] as Json;
  const op = operation[method.toLowerCase()] as Json | undefined;
  if (!op) {
    if (res.status < 400) fail(`the document has no ${method} operation on ${route.template}`, method, path, res);
    return errorResponse(checker, method, path, res, `no ${method} operation`);
  }
  const responses = op.responses as Json;
  if (!(status in responses)) fail(`status not documented for ${method} ${route.template} (documented: ${Object.keys(responses).join(', ')})`, method, path, res);
  const pointer = `/paths/${escapePointer(route.template)}/${method.toLowerCase()}/responses/${status}`;
  const { value, pointer: resolved } = resolve(checker.doc, responses[status] as Json);
  return { response: value, pointer: resolved ?? pointer };
}

/** An answer outside the document's operations must be one of its error envelopes. */
function errorResponse(checker: Checker, method: string, path: string, res: CheckedResponse, why: string): { response: Json; pointer: string } {
  const name = `Error${res.status}`;
  const response = ((checker.doc.components as Json).responses as Json)[name] as Json | undefined;
  if (!response) fail(`${why}, and no error envelope is documented for this status`, method, path, res);
  return { response, pointer: `/components/responses/${name}` };
}

/** Throws (failing the test) when the answer is not what the document says. */
export async function checkAgainstOpenApi(baseUrl: string, method: string, urlPath: string, res: CheckedResponse): Promise<void> {
  if (method.toUpperCase() === 'HEAD') return;
  const path = new URL(urlPath, 'http://x').pathname;
  const checker = await checkerFor(baseUrl);
  const found = documentedResponse(checker, method.toUpperCase(), path, res);
  if (!found) return;
  const { response, pointer } = found;

  for (const [name, raw] of Object.entries((response.headers ?? {}) as Json)) {
    const { value: header } = resolve(checker.doc, raw as Json);
    if (header.required && !res.headers.has(name)) fail(`required header ${name} is missing`, method, path, res);
  }

  const content = (response.content ?? {}) as Json;
  const type = (res.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
  if (!(type in content)) {
    if (Object.keys(content).length === 0 && res.text === '') return;
    fail(`content type ${JSON.stringify(type)} not documented (documented: ${Object.keys(content).join(', ') || 'none'})`, method, path, res);
  }
  if (type !== 'application/json') return;
  const validate = validatorAt(checker, `${pointer}/content/application~1json/schema`);
  if (!validate(res.body)) {
    fail('the body does not match the document', method, path, res, checker.ajv.errorsText(validate.errors, { separator: '\n' }));
  }
}
