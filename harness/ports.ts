import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';

/**
 * Ports for servers that tests and development tools start, picked below the kernel's ephemeral
 * range. A port the kernel hands out for port 0 is also what it hands to outgoing connections
 * and to any other process asking for port 0 (the Temporal CLI picks its own metrics and HTTP
 * ports that way), so a port probed there and released can be taken before our server binds it.
 * Below the range only another explicit pick can take it, and picks are random over ~20,000 ports.
 */
const EPHEMERAL_LOW = ephemeralRangeStart();
const LOW = 10_000;
// Never above 32767 either: the Temporal server keeps its membership ports in a smallint column.
const HIGH = Math.min(EPHEMERAL_LOW - 1, 32_767);

/** `count` distinct ports on 127.0.0.1, each free when probed and all released on return. */
export async function freePorts(count: number): Promise<number[]> {
  const held: Server[] = [];
  try {
    for (let tries = 0; held.length < count; tries++) {
      if (tries > 1_000) throw new Error(`no ${count} free ports in ${LOW}-${HIGH}`);
      const wanted = HIGH > LOW ? LOW + Math.floor(Math.random() * (HIGH - LOW + 1)) : 0;
      const server = await listening(wanted);
      // Held until all are found, so the same port is never handed out twice.
      if (server) held.push(server);
    }
    return held.map((server) => (server.address() as { port: number }).port);
  } finally {
    await Promise.all(held.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}

/** One port on 127.0.0.1 that was free when probed and is closed again. */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

/** Whether nothing listens on the port on 127.0.0.1 now (a server stopped and freed it). */
export async function portIsFree(port: number): Promise<boolean> {
  const server = await listening(port);
  if (!server) return false;
  await new Promise((resolve) => server.close(resolve));
  return true;
}

function listening(port: number): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** Linux says where its ephemeral range starts; elsewhere assume the IANA range (49152). */
function ephemeralRangeStart(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/);
    const parsed = Number(low);
    return Number.isInteger(parsed) && parsed > LOW ? parsed : 49_152;
  } catch {
    return 49_152;
  }
}
