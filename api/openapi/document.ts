/**
 * The OpenAPI 3.1 document of the public API, served at `GET /openapi.json`. It is
 * built from what the api runs on: the joi schemas of api/schemas (request bodies,
 * through joi's own JSON Schema converter), the presenters' field lists (checked
 * by the compiler), the event catalog, the error catalogue and the configured
 * operator catalog. One module per resource adds its paths and schemas.
 */
import type { Config } from '../../common/config.js';
import { METADATA_KEY_MAX_LENGTH, METADATA_MAX_KEYS, METADATA_VALUE_MAX_LENGTH } from '../schemas/validate.js';
import { errorComponents, HEADERS, PARAMETERS, SECURITY_SCHEMES } from './components.js';
import { apiKeysPart } from './api-keys.js';
import { eventsPart } from './events.js';
import { operatorsPart } from './operators.js';
import { paymentIntentsPart } from './payment-intents.js';
import { referencePart } from './reference.js';
import { refundsPart } from './refunds.js';
import { payoutsPart } from './payouts.js';
import { operatorDiscrepanciesPart } from './operator-discrepancies.js';
import { balancePart } from './balance.js';
import type { DocumentPart, Schema } from './schema.js';
import { webhookEndpointsPart } from './webhook-endpoints.js';

export const OPENAPI_PATH = '/openapi.json';

const DESCRIPTION = `Payment intents and webhook endpoints behind a Stripe-style API.

Every \`/v1\` request needs \`Authorization: Bearer sk_test_…\` (or \`sk_live_…\`), or the key as the HTTP Basic user name: \`curl -u sk_test_…:\`. Bodies are JSON objects or form-encoded in Stripe's bracket notation, so the official Stripe SDKs work as clients (point them at this service with \`host\`, \`port\` and \`protocol\`). Success is always 200.

Retry a POST that got a network error, a 409 \`idempotency_in_flight\` or a 503 with the same \`Idempotency-Key\`; \`Stripe-Should-Retry\` says so on every error. Every error code is explained on [the error codes page](/docs/errors).`;

const METADATA: Schema = {
  type: 'object',
  description: `Your own key-value pairs: at most ${METADATA_MAX_KEYS} keys of 1 to ${METADATA_KEY_MAX_LENGTH} characters (any but NUL; \`.\`, \`$\` and \`__proto__\` are fine), string values of at most ${METADATA_VALUE_MAX_LENGTH}.`,
  maxProperties: METADATA_MAX_KEYS,
  propertyNames: { minLength: 1, maxLength: METADATA_KEY_MAX_LENGTH },
  additionalProperties: { type: 'string', maxLength: METADATA_VALUE_MAX_LENGTH },
};

/**
 * `baseUrl`: the service's own (`PUBLIC_BASE_URL`, else the origin the document was
 * asked on), for `servers` and the code samples.
 */
export function buildOpenApiDocument(config: Pick<Config, 'operators' | 'defaultCurrency'>, baseUrl: string): Schema {
  const parts: DocumentPart[] = [
    paymentIntentsPart({ operators: config.operators, defaultCurrency: config.defaultCurrency, baseUrl }),
    webhookEndpointsPart(),
    eventsPart(),
    operatorsPart({ operators: config.operators }),
    refundsPart({ operators: config.operators, baseUrl }),
    operatorDiscrepanciesPart({ operators: config.operators }),
    apiKeysPart(),
    payoutsPart({ operators: config.operators }),
    balancePart({ operators: config.operators }),
    referencePart(),
  ];
  const errors = errorComponents();
  return {
    openapi: '3.1.0',
    info: {
      title: 'Payments API',
      version: '1',
      description: DESCRIPTION,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: baseUrl.replace(/\/+$/, ''), description: 'This service' }],
    security: [{ secretKey: [] }, { basicKey: [] }],
    tags: parts.map((part) => part.tag),
    paths: Object.assign({}, ...parts.map((part) => part.paths)),
    components: {
      securitySchemes: SECURITY_SCHEMES,
      headers: HEADERS,
      parameters: PARAMETERS,
      responses: errors.responses,
      schemas: Object.assign({ Metadata: METADATA }, ...parts.map((part) => part.schemas), errors.schemas),
    },
  };
}
