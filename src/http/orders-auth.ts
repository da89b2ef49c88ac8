import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { type Config, ConfigError } from '../config';
import { isLoopbackHost } from '../net/addresses';
import { API_KEYS_FORMAT, type ApiKey, findApiKey, type OrderScope } from '../config/api-keys';
import { HttpError } from './errors';
import { headerLines } from './header-lines';

export type OrdersApiAccess =
  | { readonly kind: 'off' }
  /** Development on loopback without keys: as before, every caller may do everything. */
  | { readonly kind: 'open' }
  | { readonly kind: 'keys'; readonly keys: readonly ApiKey[] };

export type OrdersApiConfig = Pick<Config, 'ORDERS_API' | 'ORDERS_API_KEYS' | 'NODE_ENV' | 'HOST'>;

/**
 * Checked by the process that serves the API, not loadConfig: workers need no keys. Without keys
 * the API is open only in development and only on loopback.
 */
export function ordersApiAccess(config: Partial<OrdersApiConfig>): OrdersApiAccess {
  if (config.ORDERS_API === 'off') return { kind: 'off' };
  const keys = config.ORDERS_API_KEYS ?? [];
  if (keys.length > 0) return { kind: 'keys', keys };
  const host = config.HOST ?? '127.0.0.1';
  if ((config.NODE_ENV ?? 'development') === 'production') {
    throw new ConfigError([
      `ORDERS_API_KEYS: in production the orders API needs keys (${API_KEYS_FORMAT}); or set ORDERS_API=off when orders are created elsewhere`,
    ]);
  }
  if (!isLoopbackHost(host)) {
    throw new ConfigError([
      `ORDERS_API_KEYS: HOST=${host} is not loopback, so anyone on the network could read and create orders: set ORDERS_API_KEYS (${API_KEYS_FORMAT}), or ORDERS_API=off`,
    ]);
  }
  return { kind: 'open' };
}

export interface OrdersCaller {
  /** The key's ID (safe to log), or null on the open development API. */
  readonly keyId: string | null;
  readonly scopes: ReadonlySet<OrderScope>;
}

const EVERYTHING: OrdersCaller = {
  keyId: null,
  scopes: new Set(['orders:read', 'orders:read:pii', 'orders:write']),
};
const REALM = 'Bearer realm="orders"';

export interface OrdersAuth {
  /** A route's onRequest hook: 401 without a valid key, 403 when the key lacks `scope`. */
  require(scope: OrderScope): onRequestAsyncHookHandler;
  callerOf(request: FastifyRequest): OrdersCaller;
}

/**
 * At onRequest, before the body is read or anything looked up: every order ID, existing or not,
 * gets the same 401 or 403.
 */
export function createOrdersAuth(access: Exclude<OrdersApiAccess, { kind: 'off' }>): OrdersAuth {
  const callers = new WeakMap<FastifyRequest, OrdersCaller>();
  return {
    require(scope) {
      return async (request: FastifyRequest, reply: FastifyReply) => {
        if (access.kind === 'open') {
          callers.set(request, EVERYTHING);
          return;
        }
        const key = authenticate(request, access.keys);
        // The key's ID on every later line of this request: who did what, never the key.
        request.log = request.log.child({ apiKeyId: key.id });
        reply.log = request.log;
        if (!key.scopes.has(scope)) {
          throw new HttpError(403, `this API key lacks the ${scope} scope`, {
            'www-authenticate': `${REALM}, error="insufficient_scope", scope="${scope}"`,
          });
        }
        callers.set(request, { keyId: key.id, scopes: key.scopes });
      };
    },
    callerOf(request) {
      const caller = callers.get(request);
      // A route that reads its caller without the hook is a programming error, not a client's.
      if (!caller) throw new Error(`orders route ${request.routeOptions.url} has no auth hook`);
      return caller;
    },
  };
}

function authenticate(request: FastifyRequest, keys: readonly ApiKey[]): ApiKey {
  // Node keeps only the first of two Authorization lines in request.headers: which one did the
  // client mean? Counted as received, and refused like any credential that does not hold.
  const lines = headerLines(request.raw.rawHeaders, 'authorization');
  if (lines.length === 0) {
    throw unauthorized('an API key is required: send Authorization: Bearer <key>');
  }
  if (lines.length > 1) throw unauthorized('exactly one Authorization header is allowed');
  // RFC 7235: the scheme is case-insensitive, followed by one or more spaces.
  const match = /^bearer +(\S+) *$/i.exec(lines[0]!);
  if (!match) throw unauthorized('the Authorization header must be: Bearer <key>');
  const key = findApiKey(keys, match[1]!);
  if (!key) throw unauthorized('invalid API key', 'invalid_token');
  return key;
}

function unauthorized(reason: string, error?: 'invalid_token'): HttpError {
  return new HttpError(401, reason, {
    'www-authenticate': error ? `${REALM}, error="${error}"` : REALM,
  });
}
