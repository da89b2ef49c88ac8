import { z } from 'zod';
import { parseEncryptionKeys } from '../codec/codec';
import { blankToUndefined, type Checked, doc, optionalHostPort, optionalUrl } from './fields';

/** Address and namespace come from `loadTemporalConnection`; TLS and API keys stay with it. */
export const temporalFields = {
  TEMPORAL_ADDRESS: doc(
    optionalHostPort('127.0.0.1:7233'),
    '`host:port` of a Temporal server (no scheme); required in production. Unset: `npm start` runs the embedded dev server on `127.0.0.1:7233` (`TEMPORAL_DEV_PORT`)',
    'unset (the profile’s, if any)',
  ),
  TEMPORAL_NAMESPACE: doc(
    z.string().min(1).default('default'),
    'Temporal namespace (else the profile’s)',
  ),
  TEMPORAL_UI_URL: doc(
    optionalUrl(),
    'base URL of the Temporal Web UI, for links in alerts and the codec endpoint’s allowed origin',
    'the embedded dev server’s Web UI',
  ),
  PAYLOAD_ENCRYPTION_KEY: doc(
    blankToUndefined.refine((v) => v === undefined || keysAreValid(v), {
      message:
        'must be <key id>:<base64 of 32 bytes>[,<older id>:<base64>…] (e.g. k1:$(openssl rand -base64 32))',
    }),
    'encrypts every payload stored in Temporal (AES-256-GCM; histories hold no customer data in clear): `<key id>:<base64 of 32 bytes>`, comma-separated with the current key first during rotation ([docs](payload-encryption.md))',
    'unset',
  ),
  CODEC_AUTH_TOKEN: doc(
    blankToUndefined,
    'bearer token the `/codec` endpoint requires (the Web UI can send one); unset: none',
    'unset',
  ),
  CODEC_CORS_ORIGINS: doc(
    blankToUndefined.transform((v) =>
      v
        ?.split(',')
        .map((o) => o.trim())
        .filter((o) => o.length > 0),
    ),
    'browser origins allowed to call the `/codec` endpoint, comma-separated: the Temporal Web UI’s',
    'the origin of `TEMPORAL_UI_URL` when set, else the embedded UI’s (localhost and 127.0.0.1 on `TEMPORAL_UI_PORT`)',
  ),
};

/** Read by `@temporalio/envconfig`, not the schema above: listed so the reference has them. */
export const TEMPORAL_PROFILE_VARIABLES: readonly (readonly [string, string, string])[] = [
  [
    '`TEMPORAL_CONFIG_FILE`, `TEMPORAL_PROFILE`',
    '`~/.config/temporalio/temporal.toml`, `default`',
    'a `temporal.toml` profile as the Temporal CLI reads it; the `TEMPORAL_*` variables override it ([docs](operations.md#production-temporal))',
  ],
  ['`TEMPORAL_API_KEY`', 'unset', 'API key (Temporal Cloud); turns TLS on; never logged'],
  ['`TEMPORAL_TLS`', 'unset: on with a TLS setting or API key', '`true` or `false` (`1`/`0`)'],
  [
    '`TEMPORAL_TLS_CLIENT_CERT_PATH`, `TEMPORAL_TLS_CLIENT_KEY_PATH` (or `_DATA`)',
    'unset',
    'mTLS client certificate and key (PEM), checked at start-up: readable, matching, not expired',
  ],
  [
    '`TEMPORAL_TLS_SERVER_CA_CERT_PATH` (or `_DATA`), `TEMPORAL_TLS_SERVER_NAME`',
    'unset: system CAs, the host',
    'CA of the frontend’s certificate (self-hosted); the name to check it against',
  ],
];

type Temporal = Checked<typeof temporalFields> & { TEMPORAL_UI_PORT: number };

export function checkTemporalInProduction(c: Temporal, ctx: z.RefinementCtx): void {
  if (!c.TEMPORAL_ADDRESS) {
    ctx.addIssue({
      code: 'custom',
      path: ['TEMPORAL_ADDRESS'],
      message: 'set it in production; the embedded dev server is for development only',
    });
  }
}

/** Where the Web UI that calls the codec endpoint is served from, unless told otherwise. */
export function finishTemporal(c: Temporal) {
  return { CODEC_CORS_ORIGINS: c.CODEC_CORS_ORIGINS ?? defaultCodecOrigins(c) };
}

function defaultCodecOrigins(c: Temporal): string[] {
  if (c.TEMPORAL_UI_URL) return [new URL(c.TEMPORAL_UI_URL).origin];
  return [`http://localhost:${c.TEMPORAL_UI_PORT}`, `http://127.0.0.1:${c.TEMPORAL_UI_PORT}`];
}

function keysAreValid(setting: string): boolean {
  try {
    parseEncryptionKeys(setting);
    return true;
  } catch {
    return false;
  }
}
