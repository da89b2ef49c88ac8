import { isIP } from 'node:net';
import { z } from 'zod';
import { parseApiKeys } from './api-keys';
import { blankToUndefined, doc, integer, optionalHostPort, port } from './fields';

/** Where the HTTP process serves /metrics and /readyz unless ADMIN_ADDRESS says otherwise. */
export const DEFAULT_ADMIN_ADDRESS = '127.0.0.1:9465';

/** The HTTP process: its listeners, who it trusts, the orders API and how long a webhook waits. */
export const httpFields = {
  HOST: doc(z.string().default('127.0.0.1'), 'address the HTTP server listens on'),
  PORT: doc(port(3000), 'port of the HTTP server'),
  TEMPORAL_START_TIMEOUT_MS: doc(
    integer(100, 60_000).default(5_000),
    'how long the webhook waits for Temporal to start its workflow; past it the provider gets 503 and retries',
  ),
  HTTP_TRUST_PROXY: doc(
    blankToUndefined
      .refine((v) => v === undefined || parseTrustProxy(v) !== undefined, {
        message:
          'must be a hop count (e.g. 1) or comma-separated proxy addresses/CIDRs (e.g. 10.0.0.0/8,127.0.0.1)',
      })
      .transform((v) => (v === undefined ? false : (parseTrustProxy(v) ?? false))),
    'reverse proxies trusted to set `X-Forwarded-For`: a hop count or addresses/CIDRs. Unset: the socket’s peer is the client, which behind a proxy makes every client one address',
    'unset',
  ),
  ORDERS_API: doc(
    z.enum(['on', 'off'], { message: 'must be on or off' }).default('on'),
    '`off` when the shop creates orders elsewhere: `/api/v1/orders` is then not served at all',
  ),
  ORDERS_API_KEYS: doc(
    blankToUndefined.transform((v, ctx) => {
      if (v === undefined) return [];
      try {
        return parseApiKeys(v);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
    }),
    'keys of the orders API, `<id>:<key>:<scope>+…`, comma-separated, several at once so one can be rotated out. Needed in production (or `ORDERS_API=off`); unset in development the API is open on loopback only ([docs/security.md](security.md))',
    'unset',
  ),
  ADMIN_ADDRESS: doc(
    optionalHostPort('127.0.0.1:9465', { orOff: true }).transform(
      (v) => v ?? DEFAULT_ADMIN_ADDRESS,
    ),
    'host:port of the HTTP process’s admin listener (`/metrics`, `/readyz`, `/healthz`), or `off`; loopback by default: what it reveals is for operators, never for the internet',
    `\`${DEFAULT_ADMIN_ADDRESS}\``,
  ),
};

/**
 * `false` (no proxy), a hop count, or proxy addresses/CIDRs, as Fastify's `trustProxy` takes
 * them; undefined when the value is not understood.
 */
function parseTrustProxy(value: string): false | number | string[] | undefined {
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops > 10) return undefined;
    return hops === 0 ? false : hops;
  }
  const entries = value.split(',').map((e) => e.trim());
  const isAddressOrCidr = (entry: string) => {
    const [address = '', bits, ...rest] = entry.split('/');
    const family = isIP(address);
    if (family === 0 || rest.length > 0) return false;
    if (bits === undefined) return true;
    return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
  };
  return entries.every(isAddressOrCidr) ? entries : undefined;
}
