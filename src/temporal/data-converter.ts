import type { DataConverter } from '@temporalio/common';
import { codecFromSetting } from './codec';

/**
 * The data converter every Temporal client and worker of this project must share: with
 * PAYLOAD_ENCRYPTION_KEY set, payloads are encrypted by the codec; unset, the SDK's default.
 * A worker without it could not read what a client with it wrote, and the other way round.
 */
export function dataConverterFor(
  payloadEncryptionKey: string | undefined,
): DataConverter | undefined {
  const codec = codecFromSetting(payloadEncryptionKey);
  return codec ? { payloadCodecs: [codec] } : undefined;
}

/** The Web UI's codec endpoint settings, when payloads are encrypted; undefined otherwise. */
export function codecEndpointFor(config: {
  PAYLOAD_ENCRYPTION_KEY: string | undefined;
  CODEC_AUTH_TOKEN: string | undefined;
  CODEC_CORS_ORIGINS: string[];
}) {
  const codec = codecFromSetting(config.PAYLOAD_ENCRYPTION_KEY);
  return codec
    ? { codec, allowedOrigins: config.CODEC_CORS_ORIGINS, authToken: config.CODEC_AUTH_TOKEN }
    : undefined;
}
