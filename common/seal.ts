/**
 * Text sealed with AES-256-GCM under one of the service's own keys, which Redis never
 * holds (service-keys.ts): for what must pass through Redis but not be readable
 * there. The additional data binds a sealed text to what it was sealed for (a
 * request, a job): it opens for that alone.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Collection } from 'mongodb';
import type { ServiceKeyDoc } from './documents.js';
import { ServiceKey } from './service-keys.js';

const VERSION = 'v1';

export class Seal {
  private readonly key: ServiceKey;

  constructor(keys: Collection<ServiceKeyDoc>, keyId: string) {
    this.key = new ServiceKey(keys, keyId);
  }

  /** Loads the key (once per process; again after a failed load). Throws while MongoDB is away. */
  ready(): Promise<Buffer> {
    return this.key.ready();
  }

  async seal(boundTo: string, text: string): Promise<string> {
    const key = await this.ready();
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(boundTo));
    const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), Buffer.concat([body, cipher.getAuthTag()]).toString('base64url')].join('.');
  }

  /** Throws on a sealed text that is not this key's, or not bound to `boundTo`. */
  async open(boundTo: string, sealed: string): Promise<string> {
    const key = await this.ready();
    const [version, iv, rest] = sealed.split('.');
    if (version !== VERSION || !iv || !rest) throw new Error('a sealed text of an unknown form');
    const bytes = Buffer.from(rest, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(boundTo));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    return Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - 16)), decipher.final()]).toString('utf8');
  }
}
