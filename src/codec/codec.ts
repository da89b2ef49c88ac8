import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

/**
 * Encrypts every payload (workflow inputs and results, activity arguments and results, signals,
 * memos, failure details) before it leaves the process, so histories on the Temporal server
 * hold no customer data in clear. AES-256-GCM: confidentiality and integrity; a fresh 96-bit
 * nonce per payload. The key ID travels in the metadata, so keys can be rotated: new payloads
 * use the current key, old ones are still read with the previous key.
 */

const ENCODING = 'binary/encrypted';
const KEY_ID_METADATA = 'encryption-key-id';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export interface EncryptionKey {
  id: string;
  /** 32 bytes. */
  key: Buffer;
}

export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly byId: Map<string, Buffer>;

  /** `current` encrypts; `current` and every key in `previous` decrypt. */
  constructor(
    private readonly current: EncryptionKey,
    previous: EncryptionKey[] = [],
  ) {
    for (const k of [current, ...previous]) {
      if (k.key.length !== 32)
        throw new Error(`encryption key ${k.id} must be 32 bytes, got ${k.key.length}`);
    }
    this.byId = new Map([current, ...previous].map((k) => [k.id, k.key]));
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', this.current.key, nonce);
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const sealed = Buffer.concat([
        nonce,
        cipher.update(plain),
        cipher.final(),
        cipher.getAuthTag(),
      ]);
      return {
        metadata: {
          [METADATA_ENCODING_KEY]: Buffer.from(ENCODING),
          [KEY_ID_METADATA]: Buffer.from(this.current.id),
        },
        data: sealed,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
      // Payloads written before encryption was switched on stay readable.
      if (!encoding || Buffer.from(encoding).toString() !== ENCODING) return payload;
      const keyId = Buffer.from(payload.metadata?.[KEY_ID_METADATA] ?? []).toString();
      const key = this.byId.get(keyId);
      if (!key) throw new Error(`payload encrypted with unknown key "${keyId}"`);
      const data = Buffer.from(payload.data ?? []);
      if (data.length < NONCE_BYTES + TAG_BYTES) throw new Error('encrypted payload is truncated');
      const nonce = data.subarray(0, NONCE_BYTES);
      const tag = data.subarray(data.length - TAG_BYTES);
      const decipher = createDecipheriv('aes-256-gcm', key, nonce);
      decipher.setAuthTag(tag);
      const plain = Buffer.concat([
        decipher.update(data.subarray(NONCE_BYTES, data.length - TAG_BYTES)),
        decipher.final(),
      ]);
      return temporal.api.common.v1.Payload.decode(plain);
    });
  }
}

/**
 * Reads `PAYLOAD_ENCRYPTION_KEY` (`<id>:<base64 of 32 bytes>`, comma-separated with the current
 * key first during rotation). Undefined: no encryption.
 */
export function codecFromSetting(setting: string | undefined): AesGcmPayloadCodec | undefined {
  if (!setting) return undefined;
  const keys = parseEncryptionKeys(setting);
  return new AesGcmPayloadCodec(keys[0]!, keys.slice(1));
}

export function parseEncryptionKeys(setting: string): EncryptionKey[] {
  const keys = setting.split(',').map((part) => {
    const match = /^([A-Za-z0-9_.-]{1,64}):([A-Za-z0-9+/=]+)$/.exec(part.trim());
    if (!match) throw new Error('each key must be <id>:<base64 of 32 bytes>');
    const key = Buffer.from(match[2]!, 'base64');
    if (key.length !== 32)
      throw new Error(`key ${match[1]} must decode to 32 bytes, got ${key.length}`);
    return { id: match[1]!, key };
  });
  if (keys.length === 0) throw new Error('no key given');
  return keys;
}
