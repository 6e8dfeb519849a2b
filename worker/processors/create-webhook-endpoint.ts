/**
 * Creates a webhook endpoint, idempotent on the id the api generated. The signing
 * secret is made here, so it never travels in job data (the dashboard shows job
 * data); it leaves the service only in the create response and its replays.
 */
import { randomBytes } from 'node:crypto';
import type { Job } from 'bullmq';
import type { CreateJobResult, CreateWebhookEndpointData } from '../../common/jobs.js';
import { presentWebhookEndpoint } from '../../common/presenters.js';
import { markScopeHooked } from '../webhooks/subscriptions.js';
import { runCreate, type CreateDeps } from './create.js';

export async function createWebhookEndpoint(deps: CreateDeps, job: Job<CreateWebhookEndpointData>): Promise<CreateJobResult> {
  const data = job.data;
  // Before the insert: an endpoint visible in MongoDB always has its scope marked.
  await markScopeHooked(deps.redis, deps.prefix, data);
  return runCreate(deps, String(job.id), data, {
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
  });
}
