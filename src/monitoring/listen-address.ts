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
