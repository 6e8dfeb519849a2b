/**
 * A confirm's secret input (the payer's full phone number, the one-time code) rides
 * in its job sealed: AES-256-GCM under a key that Redis never holds (security review
 * M2, its second fix). The key is the service's own, kept in MongoDB
 * (`service_keys`) and made by the first process that needs it. Reading a payer's
 * number then takes Redis and MongoDB together, where the earlier fix (the input in
 * a MongoDB document of its own) needed MongoDB alone, and it costs no store command
 * per confirm: that document was three (docs/performance.md).
 *
 * The request's id is the cipher's additional data: a sealed input opens only in
 * the job it was sealed for.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Collection } from 'mongodb';
import type { ServiceKeyDoc } from './documents.js';
import { ServiceKey } from './service-keys.js';

/** What a confirm must not put in Redis in the clear. */
export interface SecretInput {
  phone_number: string;
  otp: string | null;
}

const KEY_ID = 'confirm_input';
const VERSION = 'v1';

export class InputSeal {
  private readonly key: ServiceKey;

  constructor(keys: Collection<ServiceKeyDoc>) {
    this.key = new ServiceKey(keys, KEY_ID);
  }

  /** Loads the key (once per process; again after a failed load). Throws while MongoDB is away. */
  ready(): Promise<Buffer> {
    return this.key.ready();
  }

  async seal(requestId: string, input: SecretInput): Promise<string> {
    const key = await this.ready();
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(requestId));
    const body = Buffer.concat([cipher.update(JSON.stringify([input.phone_number, input.otp])), cipher.final()]);
    return [VERSION, iv.toString('base64url'), Buffer.concat([body, cipher.getAuthTag()]).toString('base64url')].join('.');
  }

  /** Throws on a sealed input that is not this service's, or not this request's. */
  async open(requestId: string, sealed: string): Promise<SecretInput> {
    const key = await this.ready();
    const [version, iv, rest] = sealed.split('.');
    if (version !== VERSION || !iv || !rest) throw new Error('a sealed input of an unknown form');
    const bytes = Buffer.from(rest, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(requestId));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    const plain = Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - 16)), decipher.final()]);
    const [phone_number, otp] = JSON.parse(plain.toString('utf8')) as [string, string | null];
    return { phone_number, otp };
  }
}
