import { randomBytes } from 'node:crypto';
import Fastify from 'fastify';
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmPayloadCodec, codecFromSetting, parseEncryptionKeys } from '../../src/codec/codec';
import { codecRoutes } from '../../src/http/routes/codec';
import { registerErrorHandler } from '../../src/http/errors';

const key = (id: string) => ({ id, key: randomBytes(32) });
const secretData = { customerEmail: 'buyer@example.com', orderId: 12 };

describe('AES-GCM payload codec', () => {
  it('encrypts payloads so no field is readable, and decrypts them back', async () => {
    const codec = new AesGcmPayloadCodec(key('k1'));
    const payload = defaultPayloadConverter.toPayload(secretData);
    const [encrypted] = await codec.encode([payload]);

    expect(Buffer.from(encrypted!.metadata!.encoding!).toString()).toBe('binary/encrypted');
    expect(Buffer.from(encrypted!.data!).toString('latin1')).not.toContain('buyer@example.com');
    const [decrypted] = await codec.decode([encrypted!]);
    expect(defaultPayloadConverter.fromPayload(decrypted!)).toEqual(secretData);
  });

  it('reads payloads of the previous key during rotation, and clear ones from before encryption', async () => {
    const old = key('old');
    const before = await new AesGcmPayloadCodec(old).encode([
      defaultPayloadConverter.toPayload(secretData),
    ]);
    const rotated = new AesGcmPayloadCodec(key('new'), [old]);
    const clear = defaultPayloadConverter.toPayload('plain');

    const decoded = await rotated.decode([...before, clear]);
    expect(decoded.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([
      secretData,
      'plain',
    ]);
  });

  it('refuses a tampered payload and an unknown key', async () => {
    const codec = new AesGcmPayloadCodec(key('k1'));
    const [encrypted] = await codec.encode([defaultPayloadConverter.toPayload(secretData)]);
    const tampered = Buffer.from(encrypted!.data!);
    tampered[20] = tampered[20]! ^ 0xff;
    await expect(codec.decode([{ ...encrypted!, data: tampered }])).rejects.toThrow();
    await expect(new AesGcmPayloadCodec(key('other')).decode([encrypted!])).rejects.toThrow(
      /unknown key "k1"/,
    );
  });

  it('parses the setting: <id>:<base64>, current key first, and rejects short keys', () => {
    const a = randomBytes(32).toString('base64');
    const b = randomBytes(32).toString('base64');
    expect(parseEncryptionKeys(`k2:${a},k1:${b}`).map((k) => k.id)).toEqual(['k2', 'k1']);
    expect(() => parseEncryptionKeys(`k1:${randomBytes(16).toString('base64')}`)).toThrow(
      /32 bytes/,
    );
    expect(() => parseEncryptionKeys('nonsense')).toThrow();
    expect(codecFromSetting(undefined)).toBeUndefined();
  });
});

describe('codec endpoint for the Web UI', () => {
  const codec = new AesGcmPayloadCodec(key('k1'));
  const wire = (
    payloads: Array<{
      metadata?: Record<string, Uint8Array | null> | null;
      data?: Uint8Array | null;
    }>,
  ) => ({
    payloads: payloads.map((p) => ({
      metadata: Object.fromEntries(
        Object.entries(p.metadata ?? {}).map(([k, v]) => [
          k,
          Buffer.from(v ?? []).toString('base64'),
        ]),
      ),
      data: Buffer.from(p.data ?? []).toString('base64'),
    })),
  });

  async function app(authToken?: string) {
    const server = Fastify();
    registerErrorHandler(server);
    await server.register(codecRoutes, {
      codec,
      allowedOrigins: ['http://localhost:8233'],
      authToken,
    });
    return server;
  }

  /** POST /codec/decode, as the Web UI sends it. */
  function decode(
    server: Awaited<ReturnType<typeof app>>,
    payload: string | object,
    headers: Record<string, string> = {},
  ) {
    return server.inject({ method: 'POST', url: '/codec/decode', headers, payload });
  }

  it('decodes what the workers encrypted, for the Web UI origin only', async () => {
    const server = await app();
    const encrypted = await codec.encode([defaultPayloadConverter.toPayload(secretData)]);
    const res = await decode(server, wire(encrypted), {
      origin: 'http://localhost:8233',
      'x-namespace': 'default',
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('http://localhost:8233');
    const body = res.json<{ payloads: Array<{ data: string }> }>();
    expect(Buffer.from(body.payloads[0]!.data, 'base64').toString()).toBe(
      JSON.stringify(secretData),
    );

    const preflight = await server.inject({
      method: 'OPTIONS',
      url: '/codec/decode',
      headers: { origin: 'http://evil.example' },
    });
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    await server.close();
  });

  it('requires the bearer token when one is configured, and rejects malformed bodies with 400', async () => {
    const server = await app('s3cret-token');
    const encrypted = await codec.encode([defaultPayloadConverter.toPayload(secretData)]);
    const denied = await decode(server, wire(encrypted));
    expect(denied.statusCode).toBe(401);
    const allowed = await decode(server, wire(encrypted), { authorization: 'Bearer s3cret-token' });
    expect(allowed.statusCode).toBe(200);
    const bad = await decode(
      server,
      { payloads: [{ data: '***' }] },
      { authorization: 'Bearer s3cret-token' },
    );
    expect(bad.statusCode).toBe(400);
    await server.close();
  });

  it('sends the CORS headers with error replies too, so the Web UI sees the status and reason', async () => {
    const server = await app('s3cret-token');
    const origin = { origin: 'http://localhost:8233' };
    const asJson = { authorization: 'Bearer s3cret-token', 'content-type': 'application/json' };
    const unauthorised = await decode(server, { payloads: [] }, origin);
    const notJson = await decode(server, '{"payloads":', { ...origin, ...asJson });
    const tooLarge = await decode(
      server,
      JSON.stringify({ payloads: [{ data: 'A'.repeat(5 * 1024 * 1024) }] }),
      { ...origin, ...asJson },
    );
    expect([unauthorised.statusCode, notJson.statusCode, tooLarge.statusCode]).toEqual([
      401, 400, 413,
    ]);
    for (const res of [unauthorised, notJson, tooLarge]) {
      expect(res.headers['access-control-allow-origin']).toBe('http://localhost:8233');
    }
    await server.close();
  });
});
