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

/** A wildcard (0.0.0.0, ::) cannot be dialled and browsers refuse it; IPv6 literals in brackets. */
export function dialHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

export function localHttpUrl(host: string, port: number): string {
  return `http://${dialHost(host)}:${port}`;
}

/** `localhost` counts (Node resolves it to loopback); wildcards and other names do not. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
