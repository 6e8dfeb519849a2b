/**
 * Text sealed with AES-256-GCM under one of the service's own keys, which Redis never
 * holds (service-keys.ts): for what must pass through Redis but not be readable
 * there. The additional data binds a sealed text to what it was sealed for (a
 * request, a job): it opens for that alone.
 *
 * The sealed form names its key's version, so that a rotation loses nothing: a text
 * is sealed under the keyring's current version and opens under any version the
 * keyring holds (or reads, for one newer than it knew):
 *
 *   v2.<version>.<iv>.<tag>.<ciphertext>   (iv 12 bytes, tag 16 bytes, base64url)
 *
 * The tag is 16 bytes, never shorter: any other length is refused before the cipher
 * sees it, and the decipher is made to expect 16. Texts sealed by older versions of
 * the service (`v1.<iv>.<ciphertext and tag>`, no key named) open under the first
 * version, or any other held.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Collection } from 'mongodb';
import type { ServiceKeyDoc } from './documents.js';
import { ServiceKeyring, type KeyringOptions, type KeyVersion } from './service-keys.js';

const TAG_BYTES = 16;
const IV_BYTES = 12;
const VERSION_PATTERN = /^[1-9][0-9]{0,8}$/;

/** A sealed text that does not open: not of this service, not for this, altered, or of a key no longer held. */
export class SealRefused extends Error {}

export class Seal {
  private readonly keyring: ServiceKeyring;

  constructor(keys: Collection<ServiceKeyDoc>, keyId: string, options: KeyringOptions = {}) {
    this.keyring = new ServiceKeyring(keys, keyId, options);
  }

  /** Loads the keys (read again now and then, service-keys.ts). Throws while MongoDB is away and none were loaded. */
  ready(): Promise<void> {
    return this.keyring.ready();
  }

  /** One AES-256-GCM encryption under the current version. */
  async seal(boundTo: string, text: string): Promise<string> {
    const { version, key } = await this.keyring.current();
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(boundTo));
    const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
    return ['v2', String(version), iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  /**
   * Throws `SealRefused` on a sealed text that does not open under a key of this
   * service for `boundTo`; any other error (MongoDB away while a new version was
   * read) is worth a retry.
   */
  async open(boundTo: string, sealed: string): Promise<string> {
    const parts = sealed.split('.');
    if (parts[0] === 'v2' && parts.length === 5) {
      const [, kid, iv, tag, body] = parts as [string, string, string, string, string];
      if (!VERSION_PATTERN.test(kid)) throw new SealRefused('a sealed text naming no key version');
      const found = await this.keyring.version(Number(kid));
      if (!found) throw new SealRefused(`a sealed text under key version ${kid}, which this service does not hold`);
      return decrypt(found, boundTo, Buffer.from(iv, 'base64url'), Buffer.from(tag, 'base64url'), Buffer.from(body, 'base64url'));
    }
    if (parts[0] === 'v1' && parts.length === 3) {
      const [, iv, rest] = parts as [string, string, string];
      const bytes = Buffer.from(rest, 'base64url');
      if (bytes.length < TAG_BYTES) throw new SealRefused('a sealed text too short to hold its tag');
      const tag = bytes.subarray(bytes.length - TAG_BYTES);
      const body = bytes.subarray(0, bytes.length - TAG_BYTES);
      // Sealed before keys had versions: under the first, unless that one was retired.
      const versions = (await this.keyring.all()).reverse();
      for (const v of versions) {
        try {
          return decrypt(v, boundTo, Buffer.from(iv, 'base64url'), tag, body);
        } catch {
          // the next version
        }
      }
      throw new SealRefused('a v1 sealed text that opens under no key held');
    }
    throw new SealRefused('a sealed text of an unknown form');
  }
}

function decrypt({ key }: KeyVersion, boundTo: string, iv: Buffer, tag: Buffer, body: Buffer): string {
  if (iv.length !== IV_BYTES) throw new SealRefused(`a sealed text whose iv is ${iv.length} bytes, not ${IV_BYTES}`);
  if (tag.length !== TAG_BYTES) throw new SealRefused(`a sealed text whose tag is ${tag.length} bytes, not ${TAG_BYTES}`);
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(boundTo));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
  } catch {
    throw new SealRefused('a sealed text that does not open: another key, another purpose, or altered');
  }
}
