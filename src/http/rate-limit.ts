import { isIPv6 } from 'node:net';

export interface FailureLimiterOptions {
  /** Failures allowed per client within `windowMs`; the next request is refused. 0: no limit. */
  limit: number;
  windowMs: number;
  /** Clients tracked at most; past it, the one whose last failure is oldest is forgotten. */
  maxClients: number;
  now?: () => number;
}

export interface FailureLimiter {
  retryAfterSeconds(ip: string): number;
  recordFailure(ip: string): boolean;
  trackedClients(): number;
}

/**
 * Only failures count, so valid requests are never refused. Per process: N replicas allow N
 * times the budget, fine for a brake on guessing, not a quota.
 */
export function createFailureLimiter(options: FailureLimiterOptions): FailureLimiter {
  const { limit, windowMs, maxClients } = options;
  const now = options.now ?? Date.now;
  const failures = new Map<string, number[]>();

  /** This client's failures inside the window, oldest first; forgets clients with none left. */
  function recent(key: string, at: number): number[] | undefined {
    const times = failures.get(key);
    if (times === undefined) return undefined;
    let expired = 0;
    while (expired < times.length && times[expired]! <= at - windowMs) expired++;
    if (expired === times.length) {
      failures.delete(key);
      return undefined;
    }
    if (expired > 0) times.splice(0, expired);
    return times;
  }

  return {
    retryAfterSeconds(ip) {
      if (limit === 0) return 0;
      const at = now();
      const times = recent(clientKey(ip), at);
      if (times === undefined || times.length < limit) return 0;
      // The oldest failure leaving the window frees one attempt.
      return Math.max(1, Math.ceil((times[0]! + windowMs - at) / 1000));
    },

    recordFailure(ip) {
      if (limit === 0) return false;
      const at = now();
      const key = clientKey(ip);
      const times = recent(key, at) ?? [];
      times.push(at);
      if (times.length > limit) times.splice(0, times.length - limit);
      // Re-insert to move the client to the end: Map iteration order is insertion order.
      failures.delete(key);
      failures.set(key, times);
      if (failures.size > maxClients) {
        const quietest = failures.keys().next().value;
        if (quietest !== undefined) failures.delete(quietest);
      }
      return times.length >= limit;
    },

    trackedClients: () => failures.size,
  };
}

/**
 * The unit a budget belongs to: an IPv4 address, or an IPv6 /64 (one subscriber's usual
 * allocation, so a single host cannot take fresh budgets by cycling its interface IDs).
 */
export function clientKey(ip: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!isIPv6(ip)) return ip;
  return `${expandIPv6(ip).slice(0, 4).join(':')}::/64`;
}

function expandIPv6(ip: string): string[] {
  const address = ip.split('%')[0]!; // drop a zone index (fe80::1%eth0)
  const [head = '', tail] = address.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':').flatMap(ipv4AsGroups));
  const before = groups(head);
  const after = tail === undefined ? [] : groups(tail);
  const zeros = Array<string>(8 - before.length - after.length).fill('0');
  return [...before, ...zeros, ...after].map((g) => parseInt(g, 16).toString(16));
}

/** An embedded dotted IPv4 tail (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) is two groups. */
function ipv4AsGroups(group: string): string[] {
  if (!group.includes('.')) return [group];
  const [a = 0, b = 0, c = 0, d = 0] = group.split('.').map(Number);
  return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
}
