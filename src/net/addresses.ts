/** host:port as the settings write it ([::1]:9464 for IPv6), split for `server.listen`. */
export function parseListenAddress(address: string): { host: string; port: number } {
  const match =
    /^\[([0-9a-fA-F:]+)\]:(\d{1,5})$/.exec(address) ?? /^([^:]+):(\d{1,5})$/.exec(address);
  const port = Number(match?.[2]);
  if (!match?.[1] || !Number.isInteger(port) || port > 65535) {
    throw new Error(`not a host:port address: ${address}`);
  }
  return { host: match[1], port };
}

/**
 * The host to dial for a server listening on `host`: a wildcard address (0.0.0.0, ::) listens
 * everywhere but cannot be dialled, and browsers refuse it; IPv6 literals go in brackets.
 */
export function dialHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** http:// URL of a local server listening on host:port. */
export function localHttpUrl(host: string, port: number): string {
  return `http://${dialHost(host)}:${port}`;
}

/**
 * A listening host only this machine can reach. `localhost` counts: Node resolves it to a
 * loopback address. Wildcards (0.0.0.0, ::) and every other name do not.
 */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
