/**
 * Creates a webhook endpoint, idempotent on the id the api generated. The signing
 * secret is made here, so it never travels in job data (the dashboard shows job
 * data); it leaves the service only in the create response and its replays. A
 * scope holds at most `endpointLimit` endpoints; past it the create answers 400
 * `webhook_endpoint_limit`, which is not recorded (a retry with the key runs again).
 */
import { randomBytes } from 'node:crypto';
import type { Job } from 'bullmq';
import type { WriteJobResult, CreateWebhookEndpointData } from '../../common/jobs.js';
import { presentWebhookEndpoint } from '../../common/presenters.js';
import { endpointLimitReached, withScopeLock } from '../webhooks/endpoint-limit.js';
import { endpointsChanged } from '../webhooks/endpoint-directory.js';
import { markScopeHooked } from '../webhooks/subscriptions.js';
import { publishRefusal, runCreate, type CreateDeps } from './create.js';

export interface EndpointCreateDeps extends CreateDeps {
  /** Endpoints per (project, livemode). */
  endpointLimit: number;
}

export async function createWebhookEndpoint(deps: EndpointCreateDeps, job: Job<CreateWebhookEndpointData>): Promise<WriteJobResult> {
  const data = job.data;
  const jobId = String(job.id);
  // Before the insert: an endpoint visible in MongoDB always has its scope marked,
  // and the scope's kept endpoint lists are dropped before and after it (endpoint-directory.ts).
  await markScopeHooked(deps.redis, deps.prefix, data, data.input.enabled_events);
  await endpointsChanged(deps.redis, deps.prefix, data);
  return withScopeLock(deps.redis, deps.prefix, data, async () => {
    if (await endpointLimitReached(deps.collections, data, deps.endpointLimit)) {
      const mode = data.livemode ? 'live' : 'test';
      const message = `This project already has the maximum of ${deps.endpointLimit} webhook endpoints in ${mode} mode. Delete one, or change an existing one, to add another.`;
      return publishRefusal(deps, jobId, data, { code: 'webhook_endpoint_limit', message }, 400);
    }
    return insertEndpoint(deps, jobId, data);
  });
}

function insertEndpoint(deps: CreateDeps, jobId: string, data: CreateWebhookEndpointData): Promise<WriteJobResult> {
  return runCreate(deps, jobId, data, {
    collection: deps.collections.webhookEndpoints,
    build: (objectId) => ({
      _id: objectId,
      project: data.project,
      livemode: data.livemode,
      url: data.input.url,
      enabled_events: data.input.enabled_events,
      description: data.input.description,
      metadata: data.input.metadata,
      status: 'enabled' as const,
      secret: `whsec_${randomBytes(24).toString('base64')}`,
      created: data.created,
      failing_since: null,
      disabled_reason: null,
    }),
    present: (doc) => JSON.stringify(presentWebhookEndpoint(doc, { withSecret: true })),
    after: () => endpointsChanged(deps.redis, deps.prefix, data),
  });
}
