/** `/v1/events`: list (with a `type` filter) and retrieve. */
import { EVENT_TYPES } from '../../common/events.js';
import { EVENT_LIST_QUERY } from '../schemas/lists.js';
import { errorResponses, idParameter, LIST_PARAMETERS, listSchema, okResponse, SHARED_LIST_PARAMETERS } from './components.js';
import { closedObject, queryParameters, ref, type DocumentPart } from './schema.js';

export const EVENT_ID = '^evt_[0-9A-Za-z]+$';

export function eventsPart(): DocumentPart {
  const event = closedObject(
    {
      id: { type: 'string', pattern: EVENT_ID, description: 'Also the `webhook-id` of its deliveries.' },
      object: { const: 'event' },
      type: { type: 'string', enum: [...EVENT_TYPES] },
      created: { type: 'integer', description: 'Unix seconds.' },
      livemode: { type: 'boolean' },
      data: closedObject({ object: { oneOf: [ref('PaymentIntent'), ref('Refund'), ref('OperatorDiscrepancy'), ref('Payout'), ref('PayoutBatch')], description: 'The object as it was when the event happened: a refund for `refund.*`, an operator discrepancy for `operator_discrepancy.*`, a payout for `payout.*`, a batch for `payout_batch.*`, else the payment intent.' } }),
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
      EventAttemptList: listSchema(
        'WebhookAttempt',
        { type: 'string', pattern: `^${url}/evt_[0-9A-Za-z]+/attempts$` },
        "A page of an event's delivery attempts, to every endpoint, newest first.",
      ),
    },
    paths: {
      [url]: {
        get: {
          operationId: 'listEvents',
          summary: 'List events',
          tags,
          parameters: [
            ...LIST_PARAMETERS,
            ...queryParameters(
              EVENT_LIST_QUERY,
              {
                type: { description: 'Only events of this type.' },
                object: { description: "Only the events of this object (a payment intent's timeline: `object=pi_…`; a refund's: `object=re_…`). Not in Stripe's API." },
              },
              SHARED_LIST_PARAMETERS,
            ),
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
      [`${url}/{id}/attempts`]: {
        get: {
          operationId: 'listEventAttempts',
          summary: "List an event's delivery attempts",
          description: 'Every attempt to deliver the event, to each endpoint: its status, latency and response code. Not in Stripe\'s API.',
          tags,
          parameters: [idParameter('The event\'s id.', 'evt_00VbYV85n9aIzXB1ggNYQfQ'), ...LIST_PARAMETERS],
          responses: { ...okResponse('A page of attempts.', ref('EventAttemptList')), ...errorResponses([400, 404]) },
        },
      },
    },
  };
}
