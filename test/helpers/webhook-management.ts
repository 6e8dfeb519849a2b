/**
 * The webhook endpoint management requests (DESIGN.md section 9) for the black-box
 * tests, what a receiver holding one secret can verify, and the delivery jobs a test
 * fires early instead of waiting out a long retry delay.
 */
import type { ExecutionContext } from 'ava';
import type { Queue } from 'bullmq';
import { Webhook } from 'standardwebhooks';
import { deliveryJobId } from '../../common/events.js';
import { QUEUES } from '../../common/jobs.js';
import { verifyWebhook } from '../../common/webhooks/verify.js';
import type { Received } from './receiver.js';
import { serviceQueue, until, type ApiResponse, type Service } from './service.js';

export const WE = '/v1/webhook_endpoints';

export interface ManageOptions {
  body?: unknown;
  idempotencyKey?: string;
}

/** One management request of an endpoint: `action` is '' (update, delete) or a sub-path such as 'rotate_secret'. */
export function manage(service: Service, key: string, method: 'POST' | 'DELETE', endpointId: string, action = '', options: ManageOptions = {}): Promise<ApiResponse> {
  const path = action ? `${WE}/${endpointId}/${action}` : `${WE}/${endpointId}`;
  return service.request(method, path, {
    key,
    ...(options.body !== undefined ? { body: options.body } : {}),
    ...(options.idempotencyKey !== undefined ? { headers: { 'Idempotency-Key': options.idempotencyKey } } : {}),
  });
}

/** The endpoint as GET shows it. */
export async function retrieveEndpoint(service: Service, key: string, endpointId: string): Promise<ApiResponse> {
  return service.request('GET', `${WE}/${endpointId}`, { key });
}

/** Asserts a 400/404 error envelope: its status, code and param. */
export function assertError(t: ExecutionContext, res: ApiResponse, status: number, code: string, param?: string): void {
  t.is(res.status, status, res.text);
  t.is(res.body?.error?.code, code, res.text);
  if (param !== undefined) t.is(res.body?.error?.param, param, res.text);
}

/** The `v1,…` signatures of a delivery. */
export function signaturesOf(delivery: Received): string[] {
  return String(delivery.headers['webhook-signature'] ?? '').split(' ').filter(Boolean);
}

/**
 * Whether a receiver holding only `secret` accepts the delivery, with both the
 * service's own verifier (common/webhooks/verify.ts) and the `standardwebhooks`
 * package; a test expects both to agree.
 */
export function verifiesWith(secret: string, delivery: Received): { ours: boolean; standard: boolean } {
  let ours = true;
  let standard = true;
  try {
    verifyWebhook(secret, delivery.headers, delivery.body);
  } catch {
    ours = false;
  }
  try {
    new Webhook(secret).verify(delivery.body, {
      'webhook-id': String(delivery.headers['webhook-id'] ?? ''),
      'webhook-timestamp': String(delivery.headers['webhook-timestamp'] ?? ''),
      'webhook-signature': String(delivery.headers['webhook-signature'] ?? ''),
    });
  } catch {
    standard = false;
  }
  return { ours, standard };
}

/** The webhooks queue of a service, closed when the test ends. */
export function webhooksQueue(t: ExecutionContext, service: Service): Queue {
  const queue = serviceQueue(service, QUEUES.webhooks);
  t.teardown(() => queue.close());
  return queue;
}

/**
 * Runs the pending retry of an event's delivery chain now: waits until the chain's
 * job sits delayed (its attempt failed and the retry is scheduled), then promotes it,
 * as if the schedule's delay had passed. The tests' schedules are an hour long, so
 * nothing but this moves a chain on.
 */
export async function fireRetry(queue: Queue, eventId: string, endpointId: string): Promise<void> {
  const jobId = deliveryJobId(eventId, endpointId);
  const job = await until(`${jobId} to wait for its retry`, async () => {
    const found = await queue.getJob(jobId);
    return found && (await found.getState()) === 'delayed' ? found : undefined;
  });
  await job.promote();
}

/** The state and return value of a delivery chain once it has finished. */
export async function finishedChain(queue: Queue, eventId: string, endpointId: string): Promise<{ state: string; returnvalue: unknown }> {
  const jobId = deliveryJobId(eventId, endpointId);
  return until(`${jobId} to finish`, async () => {
    const state = await queue.getJobState(jobId);
    if (state !== 'completed' && state !== 'failed') return undefined;
    // Read after the state: a job read while active has no return value yet.
    const job = await queue.getJob(jobId);
    return job ? { state, returnvalue: job.returnvalue as unknown } : undefined;
  });
}
