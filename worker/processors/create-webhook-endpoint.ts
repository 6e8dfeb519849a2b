/**
 * Creates a webhook endpoint, idempotent on the id the api generated. The signing
 * secret is made here, so it never travels in job data (the dashboard shows job
 * data); it leaves the service only in the create response and its replays.
 */
import { randomBytes } from 'node:crypto';
import type { Job } from 'bullmq';
import type { CreateJobResult, CreateWebhookEndpointData } from '../../common/jobs.js';
import type { WebhookEndpointDoc } from '../../common/mongo.js';
import { insertOrRead } from '../../common/mongo.js';
import { presentWebhookEndpoint } from '../../common/presenters.js';
import { runCreate, type CreateDeps } from './create.js';

export async function createWebhookEndpoint(deps: CreateDeps, job: Job<CreateWebhookEndpointData>): Promise<CreateJobResult> {
  const data = job.data;
  return runCreate(deps, String(job.id), data, async (objectId) => {
    const fresh: WebhookEndpointDoc = {
      _id: objectId,
      project: data.project,
      livemode: data.livemode,
      url: data.input.url,
      enabled_events: data.input.enabled_events,
      description: data.input.description,
      metadata: data.input.metadata,
      status: 'enabled',
      secret: `whsec_${randomBytes(24).toString('base64')}`,
      created: data.created,
      failing_since: null,
      disabled_reason: null,
    };
    const doc = await insertOrRead(deps.collections.webhookEndpoints, fresh);
    return { id: doc._id, status: 200, body: JSON.stringify(presentWebhookEndpoint(doc, { withSecret: true })) };
  });
}
