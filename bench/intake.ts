import { statSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PAYMENT_WEBHOOK_PATH } from '../src/http/routes/payment-webhook';
import { matchingSecret, signBody } from '../src/http/signature';
import { readBenchArgs } from './lib/args';
import { summarizeProfile, type ProfileSummary } from './lib/cpu-profile';
import { BENCH_WEBHOOK_SECRET, keepAliveAgent, post, signedDelivery } from './lib/http-client';
import { closedLoop, type LoopResult } from './lib/loop';
import { BARE_PATH } from './lib/names';
import { CpuMeter } from './lib/procstat';
import { machineFacts, table, writeResults, type Cell } from './lib/report';
import { fmt, fmtPercent, fmtRatio, median, percentile, sum } from './lib/stats';
import { serverProcessSection } from './lib/server-cpu';
import { startServerOfKind } from './lib/temporal';
import { startSystem, watchdog, type System } from './lib/system';

/**
 * (a) Intake: how fast the webhook turns signed HTTP requests into started workflows, next to
 * the two things that bound it: starting the same workflows straight through the client, and
 * answering HTTP 200 with Fastify and nothing else. Variants run in alternating rounds
 * (A, A', B, C, A, A', B, C, …) so drift in the machine hits all of them alike.
 *
 * No worker runs: the started workflows wait in the task queue, and only intake is measured.
 */

const VARIANTS = ['webhook', 'silent', 'raw', 'bare'] as const;
type Variant = (typeof VARIANTS)[number];

const LABEL: Record<Variant, string> = {
  webhook: 'A. webhook (production wiring, info logs)',
  silent: "A'. webhook, logger silent",
  raw: 'B. raw client.workflow.start loop',
  bare: 'C. bare Fastify 200',
};

const SETTINGS = {
  full: {
    concurrencies: [1, 32],
    rounds: 3,
    roundMs: { 1: 2_500, 32: 5_000 } as Record<number, number>,
    warmupMs: 1_500,
    profileMs: 4_000,
  },
  quick: {
    concurrencies: [32],
    rounds: 2,
    roundMs: { 32: 1_500 } as Record<number, number>,
    warmupMs: 700,
    profileMs: 1_500,
  },
};

interface Round {
  variant: Variant;
  concurrency: number;
  round: number;
  result: LoopResult;
  /** CPU seconds per process during the round. */
  cpu: Record<string, number>;
}

const runTag = `${Date.now().toString(36)}${process.pid}`;

async function main(): Promise<void> {
  const args = await readBenchArgs(
    'How fast the webhook turns signed HTTP requests into started workflows, next to starting them straight through the client and a bare Fastify 200.',
  );
  const settings = args.quick ? SETTINGS.quick : SETTINGS.full;
  const startedAt = Date.now();
  const facts = machineFacts();
  // A cluster takes half a minute to start and is stopped here, after the system on it.
  const server = await startServerOfKind(args.server);
  const stopAll = async () => {
    await system.stop();
    await server.shutdown();
  };
  let system: System;
  try {
    system = await startSystem({ http: true, server });
  } catch (error) {
    await server.shutdown();
    throw error;
  }
  const disarm = watchdog(args.quick ? 3 * 60_000 : 8 * 60_000, stopAll);
  const profileDir = mkdtempSync(path.join(os.tmpdir(), 'order-payments-bench-profile-'));
  try {
    const rawParity = await system.http!.call('compareWithStarter', undefined);
    const maxConcurrency = Math.max(...settings.concurrencies);
    const agents = {
      webhook: keepAliveAgent(maxConcurrency),
      silent: keepAliveAgent(maxConcurrency),
      bare: keepAliveAgent(maxConcurrency),
    };
    let webhookRequests = 0;
    const run = async (variant: Variant, concurrency: number, durationMs: number, tag: string) => {
      const meter = new CpuMeter(system.pids);
      const idPrefix = `intake_${runTag}_${tag}`;
      let result: LoopResult;
      if (variant === 'raw') {
        result = await system.http!.call('rawStart', { concurrency, durationMs, idPrefix });
      } else {
        const origin = system.origins![variant];
        const target = variant === 'bare' ? BARE_PATH : PAYMENT_WEBHOOK_PATH;
        result = await closedLoop({
          concurrency,
          durationMs,
          op: async (i) => {
            const { body, headers } = signedDelivery({
              id: `${idPrefix}_${i}`,
              orderId: 1,
              amount: 5400,
            });
            const reply = await post(origin, target, body, headers, agents[variant]);
            if (reply.status !== 200) throw new Error(`${reply.status} ${reply.body}`);
          },
        });
        if (variant === 'webhook') webhookRequests += result.ok + result.failed;
      }
      return { result, cpu: meter.read() };
    };

    log(`warming up (${settings.warmupMs} ms per variant)`);
    for (const variant of VARIANTS)
      await run(variant, maxConcurrency, settings.warmupMs, `warm_${variant}`);

    const rounds: Round[] = [];
    for (const concurrency of settings.concurrencies) {
      for (let round = 1; round <= settings.rounds; round++) {
        for (const variant of VARIANTS) {
          const { result, cpu } = await run(
            variant,
            concurrency,
            settings.roundMs[concurrency]!,
            `${variant}_${concurrency}_${round}`,
          );
          rounds.push({ variant, concurrency, round, result, cpu });
          log(
            `c=${concurrency} round ${round} ${variant}: ${fmt(rate(result))} req/s, p50 ${fmt(percentile(result.latenciesMs, 50))} ms, p99 ${fmt(percentile(result.latenciesMs, 99))} ms${result.failed ? `, ${result.failed} failed (${result.firstError})` : ''}`,
          );
        }
      }
    }

    // Profiles last, apart from the measured rounds: the sampling profiler slows what it watches.
    log('profiling the HTTP process: webhook, then raw start loop');
    const profiles: Partial<Record<Variant, Profiled>> = {};
    for (const variant of ['webhook', 'raw'] as const) {
      const file = path.join(profileDir, `${variant}.cpuprofile`);
      await system.http!.call('profileStart', undefined);
      const { result, cpu } = await run(
        variant,
        maxConcurrency,
        settings.profileMs,
        `profile_${variant}`,
      );
      await system.http!.call('profileStop', { file });
      profiles[variant] = {
        summary: summarizeProfile(file),
        requests: result.ok,
        httpCpuUsPerRequest: ((cpu.http ?? 0) / result.ok) * 1e6,
        othersPercent:
          (Math.max(
            (cpu.machine ?? 0) -
              sum(
                Object.entries(cpu)
                  .filter(([k]) => k !== 'machine')
                  .map(([, v]) => v),
              ),
            0,
          ) /
            (result.elapsedMs / 1000)) *
          100,
      };
    }

    const hmac = hmacCost();
    const logBytes = statSync(system.logs.http).size;
    const logLines = readFileSync(system.logs.http, 'utf8').split('\n').filter(Boolean).length;

    const file = await writeResults({
      name: args.server === 'cluster' ? 'intake-cluster' : 'intake',
      title: 'Intake: webhook vs raw workflow start vs bare HTTP',
      args,
      facts,
      startedAt,
      setup: {
        'Temporal server': system.server.description,
        processes:
          'driver + load generator (node:http keep-alive, closed loop); HTTP process (bench/hosts/http-host.ts); the Temporal server above; no worker',
        'raw loop start options': rawParity,
        rounds: `${settings.rounds} per variant and concurrency, alternating A, A', B, C; ${settings.concurrencies.map((c) => `${settings.roundMs[c]! / 1000} s at concurrency ${c}`).join(', ')}; warm-up ${settings.warmupMs / 1000} s per variant first`,
      },
      sections: [
        ...settings.concurrencies.map((c) => summarySection(rounds, c)),
        cpuSection(rounds, maxConcurrency),
        ...optional(
          serverProcessSection({
            heading: `## Temporal cluster processes (concurrency ${maxConcurrency})`,
            unit: 'request',
            scale: 1e6,
            scaleLabel: 'microseconds',
            rows: VARIANTS.map((k) => {
              const mine = rounds.filter(
                (r) => r.variant === k && r.concurrency === maxConcurrency,
              );
              return {
                label: LABEL[k],
                units: sum(mine.map((r) => r.result.ok)),
                seconds: sum(mine.map((r) => r.result.elapsedMs)) / 1000,
                cpu: mine.map((r) => r.cpu),
              };
            }),
          }),
        ),
        profileSection(profiles),
        [
          '## Smaller costs, measured on their own',
          '',
          table(
            ['what', 'cost'],
            [
              ['HMAC-SHA256 of one ~90-byte body (sign)', `${fmt(hmac.signUs)} µs`],
              [
                'signature check as the route does it (HMAC + constant-time compare)',
                `${fmt(hmac.verifyUs)} µs`,
              ],
              [
                'log written per webhook request (info level, JSON to a file)',
                `${fmt(logBytes / Math.max(webhookRequests, 1))} bytes, ${fmt(logLines / Math.max(webhookRequests, 1))} lines`,
              ],
            ],
          ),
        ].join('\n'),
        roundsSection(rounds),
      ],
    });
    log(`wrote ${path.relative(process.cwd(), file)}`);
  } finally {
    disarm();
    rmSync(profileDir, { recursive: true, force: true });
    await stopAll();
  }
}

function rate(result: LoopResult): number {
  return (result.ok / result.elapsedMs) * 1000;
}

function summarySection(rounds: Round[], concurrency: number): string {
  const of = (variant: Variant) =>
    rounds.filter((r) => r.variant === variant && r.concurrency === concurrency);
  const rawRate = median(of('raw').map((r) => rate(r.result)));
  const rows: Cell[][] = VARIANTS.map((variant) => {
    const mine = of(variant);
    const rates = mine.map((r) => rate(r.result));
    const latencies = mine.flatMap((r) => r.result.latenciesMs);
    return [
      LABEL[variant],
      fmt(median(rates)),
      `${fmt(Math.min(...rates))}–${fmt(Math.max(...rates))}`,
      fmt(percentile(latencies, 50)),
      fmt(percentile(latencies, 99)),
      sum(mine.map((r) => r.result.failed)),
      fmtRatio(median(rates) / rawRate),
    ];
  });
  const webhook = median(of('webhook').map((r) => rate(r.result)));
  const ratio = webhook / rawRate;
  return [
    `## Concurrency ${concurrency}`,
    '',
    table(
      ['variant', 'req/s (median of rounds)', 'min–max', 'p50 ms', 'p99 ms', 'failed', 'vs B'],
      rows,
    ),
    '',
    `Target: webhook ≥ 0.9 × raw start rate. At concurrency ${concurrency}: **${fmtRatio(ratio)}**, ${ratio >= 0.9 ? 'met' : 'not met'}.`,
  ].join('\n');
}

function cpuSection(rounds: Round[], concurrency: number): string {
  const rows: Cell[][] = VARIANTS.map((variant) => {
    const mine = rounds.filter((r) => r.variant === variant && r.concurrency === concurrency);
    const requests = sum(mine.map((r) => r.result.ok));
    const seconds = sum(mine.map((r) => r.result.elapsedMs)) / 1000;
    const perRequest = (role: string) => (sum(mine.map((r) => r.cpu[role] ?? 0)) / requests) * 1e6;
    const total = ['driver', 'http', 'temporal'].reduce(
      (a, role) => a + sum(mine.map((r) => r.cpu[role] ?? 0)),
      0,
    );
    const others = sum(mine.map((r) => r.cpu.machine ?? 0)) - total;
    return [
      LABEL[variant],
      fmt(perRequest('driver')),
      fmt(perRequest('http')),
      fmt(perRequest('temporal')),
      fmt((total / requests) * 1e6),
      `${fmt((total / seconds) * 100)} %`,
      `${fmt((Math.max(others, 0) / seconds) * 100)} %`,
    ];
  });
  return [
    `## Where the CPU goes (concurrency ${concurrency})`,
    '',
    'CPU time per request, in µs, from /proc (all threads). The machine has 2 cores: 200 % is all of it. "Other processes" is what the rest of the machine used meanwhile (noise from outside the benchmark).',
    '',
    table(
      [
        'variant',
        'load generator',
        'HTTP process',
        'Temporal server',
        'total',
        'our CPU in use',
        'other processes',
      ],
      rows,
    ),
  ].join('\n');
}

/** One profiled round: the profile, and the HTTP process's real CPU from /proc meanwhile. */
interface Profiled {
  summary: ProfileSummary;
  requests: number;
  httpCpuUsPerRequest: number;
  /** CPU that other processes on the machine used meanwhile, in % of one core. */
  othersPercent: number;
}

function profileSection(profiles: Partial<Record<Variant, Profiled>>): string {
  const webhook = profiles.webhook!;
  const raw = profiles.raw!;
  const categories = [
    ...new Set([...webhook.summary.categories, ...raw.summary.categories].map((c) => c.category)),
  ];
  // The sampler counts wall time on the thread, which a busy machine inflates; its shares are
  // applied to the CPU time /proc measured for the same round.
  const share = (p: Profiled, category: string) =>
    (p.summary.categories.find((c) => c.category === category)?.ms ?? 0) / p.summary.busyMs;
  const rows: Cell[][] = categories
    .map((category) => [category, share(webhook, category), share(raw, category)] as const)
    .sort((a, b) => b[1] - a[1])
    .map(([category, w, r]) => [
      category,
      fmtPercent(w),
      fmt(w * webhook.httpCpuUsPerRequest),
      fmtPercent(r),
      fmt(r * raw.httpCpuUsPerRequest),
      fmt(w * webhook.httpCpuUsPerRequest - r * raw.httpCpuUsPerRequest),
    ]);
  rows.push([
    '**HTTP process CPU per request (/proc)**',
    '100 %',
    fmt(webhook.httpCpuUsPerRequest),
    '100 %',
    fmt(raw.httpCpuUsPerRequest),
    fmt(webhook.httpCpuUsPerRequest - raw.httpCpuUsPerRequest),
  ]);
  return [
    '## Profile of the HTTP process',
    '',
    `V8 sampling profiler in the HTTP process during one extra round of each (not a measured round), at the highest concurrency. Self time is grouped by who asked for the work: time in native code and in Node's own modules counts for the package or source file that called it (a file write under pino is logging, an HTTP/2 frame under grpc-js is the Temporal client); what no package asked for (the HTTP parser fed by the event loop, microtask queues) stays under Node. Each category's share of the samples is applied to the HTTP process's CPU per request measured in /proc during the same round (µs). Webhook: ${webhook.requests} requests, other processes used ${fmt(webhook.othersPercent)} % of a core meanwhile; raw start loop: ${raw.requests} starts, others ${fmt(raw.othersPercent)} %.`,
    '',
    table(
      [
        'category',
        'webhook share',
        'webhook µs/req',
        'raw start share',
        'raw µs/start',
        'difference µs',
      ],
      rows,
    ),
    '',
    'Heaviest functions of the webhook (self time over the whole profile):',
    '',
    table(
      ['function', 'category', 'ms'],
      webhook.summary.topFunctions.map((f) => [`\`${f.name}\``, f.category, fmt(f.ms)]),
    ),
  ].join('\n');
}

function roundsSection(rounds: Round[]): string {
  return [
    '## Every round',
    '',
    table(
      ['concurrency', 'round', 'variant', 'req/s', 'p50 ms', 'p99 ms', 'ok', 'failed'],
      rounds.map((r) => [
        r.concurrency,
        r.round,
        LABEL[r.variant],
        fmt(rate(r.result)),
        fmt(percentile(r.result.latenciesMs, 50)),
        fmt(percentile(r.result.latenciesMs, 99)),
        r.result.ok,
        r.result.failed,
      ]),
    ),
  ].join('\n');
}

/** Microseconds per HMAC of a typical delivery, and per signature check as the route runs it. */
function hmacCost(): { signUs: number; verifyUs: number } {
  const { body, headers } = signedDelivery({
    id: `evt_${runTag}_123456`,
    orderId: 123456,
    amount: 5400,
  });
  const signature = headers['x-payment-signature']!;
  const iterations = 20_000;
  const time = (fn: () => void) => {
    for (let i = 0; i < 2_000; i++) fn();
    const t0 = performance.now();
    for (let i = 0; i < iterations; i++) fn();
    return ((performance.now() - t0) * 1000) / iterations;
  };
  return {
    signUs: time(() => signBody(body, BENCH_WEBHOOK_SECRET)),
    verifyUs: time(() => matchingSecret([body], signature, [BENCH_WEBHOOK_SECRET])),
  };
}

function log(line: string): void {
  process.stderr.write(`[intake] ${line}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});

/** A section that may be absent, for a spread into the list of sections. */
function optional(section: string | undefined): string[] {
  return section === undefined ? [] : [section];
}
