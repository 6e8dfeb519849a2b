/** `/v1/events`: list (with a `type` filter) and retrieve. */
import { EVENT_TYPES } from '../../common/events.js';
import { errorResponses, idParameter, LIST_PARAMETERS, listSchema, okResponse } from './components.js';
import { closedObject, ref, type DocumentPart } from './schema.js';

export const EVENT_ID = '^evt_[0-9A-Za-z]+$';

export function eventsPart(): DocumentPart {
  const event = closedObject(
    {
      id: { type: 'string', pattern: EVENT_ID, description: 'Also the `webhook-id` of its deliveries.' },
      object: { const: 'event' },
      type: { type: 'string', enum: [...EVENT_TYPES] },
      created: { type: 'integer', description: 'Unix seconds.' },
      livemode: { type: 'boolean' },
      data: closedObject({ object: { oneOf: [ref('PaymentIntent'), ref('Refund')], description: 'The object as it was when the event happened: a refund for `refund.*`, else the payment intent.' } }),
    },
    { description: 'Something that happened to an object: listed here, and delivered to subscribed endpoints as this exact JSON.' },
  );
  const url = '/v1/events';
  const tags = ['Events'];
  return {
    tag: { name: tags[0] as string, description: 'What happened, as listed and as delivered to webhook endpoints.' },
    schemas: {
      Event: event,
      EventList: listSchema('Event', { const: url }, 'A page of events, newest first.'),
    },
    paths: {
      [url]: {
        get: {
          operationId: 'listEvents',
          summary: 'List events',
          tags,
          parameters: [
            ...LIST_PARAMETERS,
            { name: 'type', in: 'query', required: false, description: 'Only events of this type.', schema: { type: 'string', enum: [...EVENT_TYPES] } },
          ],
          responses: { ...okResponse('A page of events.', ref('EventList')), ...errorResponses([400]) },
        },
      },
      [`${url}/{id}`]: {
        get: {
          operationId: 'retrieveEvent',
          summary: 'Retrieve an event',
          tags,
          parameters: [idParameter('The event\'s id.', 'evt_00VbYV85n9aIzXB1ggNYQfQ')],
          responses: { ...okResponse('The event.', ref('Event')), ...errorResponses([400, 404]) },
        },
      },
    },
  };
}
