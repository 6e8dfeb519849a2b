/** The reference itself: this document, the page that renders it, and the error codes page. */
import { errorResponses } from './components.js';
import type { DocumentPart, Schema } from './schema.js';

/** Without a key, a page can only be asked with the wrong method, or fail. */
const errors = () => errorResponses([405, 500], { keyed: false });
const html = (description: string): Schema => ({
  '200': { description, content: { 'text/html': { schema: { type: 'string' } } } },
  ...errors(),
});

export function referencePart(): DocumentPart {
  const tags = ['Reference'];
  const open = { security: [], tags };
  return {
    tag: { name: tags[0] as string, description: 'This document and the pages made from it. No API key needed.' },
    schemas: {},
    paths: {
      '/openapi.json': {
        get: {
          ...open,
          operationId: 'getOpenApiDocument',
          summary: 'This OpenAPI document',
          responses: {
            '200': { description: 'The OpenAPI 3.1 document.', content: { 'application/json': { schema: { type: 'object' } } } },
            ...errors(),
          },
        },
      },
      '/docs': { get: { ...open, operationId: 'getReferencePage', summary: 'The API reference page', responses: html('This document, rendered.') } },
      '/docs/errors': {
        get: { ...open, operationId: 'getErrorCodesPage', summary: 'The error codes page', responses: html('Every error code, with an anchor each (`doc_url`).') },
      },
    },
  };
}
