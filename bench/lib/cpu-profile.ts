import { readFileSync } from 'node:fs';

/**
 * Reads a V8 .cpuprofile and tells where the CPU went: self time grouped by what the code is
 * (our source, Fastify, pino, the Temporal client's gRPC and protobuf, node:crypto…).
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Sampled time, idle excluded, in milliseconds. */
  busyMs: number;
  idleMs: number;
  categories: Array<{ category: string; ms: number }>;
  topFunctions: Array<{ name: string; category: string; ms: number }>;
}

/** Categories in the order they are tested: the first match wins. */
const CATEGORIES: Array<[string, (f: CallFrame) => boolean]> = [
  ['idle', (f) => f.functionName === '(idle)'],
  ['garbage collection', (f) => f.functionName === '(garbage collector)'],
  ['V8 and native code outside JS (program)', (f) => f.functionName === '(program)'],
  ['HMAC and constant-time compare (node:crypto)', (f) => f.url.startsWith('node:internal/crypto')],
  [
    'Temporal client: gRPC, protobuf, payload conversion',
    (f) => /node_modules\/(@grpc|protobufjs|@protobufjs|@temporalio|long|proto3-json)/.test(f.url),
  ],
  [
    'logging: pino',
    (f) =>
      /node_modules\/(pino|sonic-boom|fast-redact|@pinojs|thread-stream|quick-format)/.test(f.url),
  ],
  [
    'Fastify and its router, parsers, serializers',
    (f) =>
      /node_modules\/(fastify|@fastify|find-my-way|avvio|fast-json-stringify|secure-json-parse|light-my-request|process-warning|abstract-logging|toad-cache|fast-querystring|rfdc|ret|safe-regex2)/.test(
        f.url,
      ),
  ],
  ['validation: zod', (f) => /node_modules\/zod/.test(f.url)],
  ['our code (src/)', (f) => /\/src\//.test(f.url) && !f.url.includes('node_modules')],
  ['bench harness (bench/)', (f) => /\/bench\//.test(f.url) && !f.url.includes('node_modules')],
  [
    'Node HTTP, net, streams, timers',
    (f) =>
      /^node:(internal\/(http|streams|stream|net|timers|async_hooks)|_http|http|net|stream|events|timers|internal\/event_target)/.test(
        f.url,
      ) || /^node:internal\/(process\/task_queues|url|dns)/.test(f.url),
  ],
  ['other Node internals', (f) => f.url.startsWith('node:')],
  ['native code called from nowhere else', (f) => f.url === ''],
  ['other npm packages', () => true],
];

export function categorize(frame: CallFrame): string {
  return CATEGORIES.find(([, test]) => test(frame))![0];
}

/** V8's pseudo-frames, which stand for themselves rather than for a caller. */
const PSEUDO_FRAMES = new Set(['(idle)', '(garbage collector)', '(program)', '(root)']);

export function summarizeProfile(file: string): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parentOf.set(child, node.id);
  // Native code and Node's own modules count for the package or source file that called them:
  // a file write under pino is logging, an HTTP/2 frame under grpc-js is the Temporal client.
  // Work that no package asked for (the HTTP parser fed by the event loop) keeps its own frame.
  const categoryOf = (id: number): string => {
    const own = byId.get(id)!.callFrame;
    if (PSEUDO_FRAMES.has(own.functionName)) return categorize(own);
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const frame = byId.get(at)!.callFrame;
      // HMAC stays HMAC, whoever calls it: it is the cost the signature check adds.
      if (frame.url.startsWith('node:internal/crypto')) return categorize(frame);
      if (frame.url !== '' && !frame.url.startsWith('node:')) return categorize(frame);
    }
    return categorize(own);
  };
  const selfUs = new Map<number, number>();
  // timeDeltas[i] is the time between sample i-1 and sample i; it belongs to sample i-1.
  for (let i = 0; i < profile.samples.length - 1; i++) {
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
  }

  const categories = new Map<string, number>();
  const functions = new Map<string, { category: string; us: number }>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame;
    const category = categoryOf(id);
    categories.set(category, (categories.get(category) ?? 0) + us);
    const where = frame.url ? `${shortUrl(frame.url)}:${frame.lineNumber + 1}` : 'native';
    const name = `${frame.functionName || '(anonymous)'} ${where}`;
    const entry = functions.get(name) ?? { category, us: 0 };
    entry.us += us;
    functions.set(name, entry);
  }
  const idleUs = categories.get('idle') ?? 0;
  categories.delete('idle');
  const busyUs = [...categories.values()].reduce((a, b) => a + b, 0);
  return {
    busyMs: busyUs / 1000,
    idleMs: idleUs / 1000,
    categories: [...categories]
      .map(([category, us]) => ({ category, ms: us / 1000 }))
      .sort((a, b) => b.ms - a.ms),
    topFunctions: [...functions]
      .filter(([, f]) => f.category !== 'idle')
      .map(([name, f]) => ({ name, category: f.category, ms: f.us / 1000 }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 12),
  };
}

function shortUrl(url: string): string {
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) return url.slice(modules + 'node_modules/'.length);
  const src = url.search(/\/(src|bench)\//);
  return src >= 0 ? url.slice(src + 1) : url.replace(/^file:\/\//, '');
}
