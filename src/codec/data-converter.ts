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

interface CodecEndpointConfig {
  NODE_ENV: string;
  HOST: string;
  PAYLOAD_ENCRYPTION_KEY: string | undefined;
  CODEC_AUTH_TOKEN: string | undefined;
  CODEC_CORS_ORIGINS: string[];
}

/**
 * Why the codec endpoint is not served although payloads are encrypted; undefined when it is
 * served (or there is nothing to serve). The endpoint decrypts whatever it is sent, and its
 * origin check binds browsers only (curl sends any Origin), so without a token it is safe only
 * on loopback in development: never in production, never on a public address.
 */
export function codecEndpointRefusal(config: CodecEndpointConfig): string | undefined {
  if (!config.PAYLOAD_ENCRYPTION_KEY || config.CODEC_AUTH_TOKEN) return undefined;
  if (config.NODE_ENV === 'production') {
    return 'in production the codec endpoint needs CODEC_AUTH_TOKEN: without it anyone who reaches the HTTP port could decrypt every payload';
  }
  if (!isLoopback(config.HOST)) {
    return `HOST=${config.HOST} is not loopback: set CODEC_AUTH_TOKEN to serve the codec endpoint there`;
  }
  return undefined;
}

/** The Web UI's codec endpoint settings; undefined when not encrypted or refused (above). */
export function codecEndpointFor(config: CodecEndpointConfig) {
  const codec = codecFromSetting(config.PAYLOAD_ENCRYPTION_KEY);
  if (!codec || codecEndpointRefusal(config)) return undefined;
  return { codec, allowedOrigins: config.CODEC_CORS_ORIGINS, authToken: config.CODEC_AUTH_TOKEN };
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
