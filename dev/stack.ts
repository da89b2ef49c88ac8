import { createPaymentStarter } from '../src/temporal/payment-starter';
import { NativeConnection } from '@temporalio/worker';
import {
  codecEndpointFor,
  codecEndpointRefusal,
  dataConverterFor,
} from '../src/codec/data-converter';
import { loadConfig } from '../src/config';
import { localHttpUrl } from '../src/net/addresses';
import {
  createDatabase,
  createOrdersRepository,
  createPartnerPausesRepository,
  createPaymentsRepository,
  createUnmatchedRepository,
  migrateToLatest,
} from '../src/db';
import { buildAdminApp, listenAdmin } from '../src/http/admin';
import { buildApp } from '../src/http/app';
import { databaseReadiness, temporalReadiness, workersReadiness } from '../src/http/health';
import { createHttpMetrics } from '../src/http/metrics';
import { ordersApiAccess } from '../src/http/orders-auth';
import { PAYMENT_WEBHOOK_PATH } from '../src/http/routes/payment-webhook';
import { providerLines } from './providers/banner';
import { createLogger } from '../src/logger';
import { startWatchdogFromConfig, WATCHED_TASK_QUEUES } from '../src/monitoring';
import { findNpmLauncher, watchLauncher } from '../harness/process/launcher';
import { createTool, parseTool } from '../src/cli/command-line';
import { runMain } from '../src/process/run-main';
import { onShutdownSignal } from '../src/process/shutdown';
import { createLazyClient } from '../src/temporal/connection';
import { startDevServer } from '../harness/temporal/dev-server';
import { createThinEventStarter } from '../src/temporal/thin-event-starter';
import {
  DEV_WORKER_METRICS_ADDRESS,
  installTemporalRuntime,
  metricsAddressFrom,
} from '../src/temporal/runtime';
import { nativeConnectionOptions } from '../src/temporal/connection';
import { SLA_CHECK_SCHEDULE_ID, STOCK_AGGREGATION_SCHEDULE_ID } from '../src/temporal/schedules';
import { ensureTemporalSetup, temporalSetupReadiness } from '../src/temporal/setup';
import { type Cleanup, startLocalPartners } from '../harness/partners';
import { startWorkerRuntime } from '../src/workers/runtime';

/**
 * `npm start`: the whole system on one machine with embedded defaults. Starts (unless configured
 * otherwise) the Temporal dev server with file persistence and its Web UI, migrates the
 * database, and runs the warehouse simulator, the worker and the HTTP server in this process.
 * Ctrl-C stops everything in reverse order.
 */
const commandLine = createTool(
  'npm start --',
  'The whole system on one machine with embedded defaults: the Temporal dev server (Web UI ' +
    'included), the database migrated, the warehouse simulator, an SMTP sink, the workers and ' +
    'the HTTP server. Ctrl-C stops everything.',
)
  .option(
    '--without-workers',
    'no workers and no build of its own: each build runs as npm run worker / heavy-worker ' +
      '(the rollout rehearsal of docs/deploys.md)',
  )
  .addHelpText('after', '\nConfigured by the environment: docs/configuration.md.');

async function main(): Promise<number | void> {
  const line = await parseTool(commandLine, (_args, options) => ({
    // The rehearsal of docs/deploys.md: each build's workers run as processes of their own
    // (npm run worker / heavy-worker), and the operator, not this stack, makes a build current.
    withWorkers: options.withoutWorkers !== true,
  }));
  if (line.kind === 'exit') return line.code;
  const { withWorkers } = line.work;
  const config = loadConfig();
  // Refused before anything starts (e.g. HOST=0.0.0.0 without ORDERS_API_KEYS).
  const ordersApi = ordersApiAccess(config);
  const logger = createLogger(config, 'dev-stack');
  const workerMetricsAddress = metricsAddressFrom(
    config.WORKER_METRICS_ADDRESS,
    DEV_WORKER_METRICS_ADDRESS,
  );
  installTemporalRuntime(logger, { metricsAddress: workerMetricsAddress });
  const cleanups: Cleanup[] = [];
  const stopAll = async () => {
    for (const { name, run } of cleanups.reverse()) {
      try {
        await run();
      } catch (err) {
        logger.error({ err, component: name }, 'error while stopping');
      }
    }
  };
  let stopping = false;
  const stop = async (exitCode: number) => {
    if (stopping) return;
    stopping = true;
    await stopAll();
    logger.info('stopped');
    process.exit(exitCode);
  };
  onShutdownSignal(async (signal) => {
    logger.info({ signal }, 'stopping: draining HTTP, finishing in-flight activities');
    await stop(0);
  });
  // Killed outright, npm cannot pass a signal on: notice it, and stop as for Ctrl-C.
  const launcher = findNpmLauncher();
  if (launcher) {
    watchLauncher(launcher, () => {
      logger.warn(
        { launcherPid: launcher.pid },
        'npm, which started this stack, is gone: stopping as for Ctrl-C',
      );
      void stop(0);
    });
  }

  const codecRefused = codecEndpointRefusal(config);
  if (codecRefused) logger.warn({ reason: codecRefused }, 'codec endpoint /codec not served');
  const codecEndpoint = codecEndpointFor(config);

  try {
    let temporalAddress = config.TEMPORAL_ADDRESS;
    let uiUrl: string | undefined;
    if (!temporalAddress) {
      const devServer = await startDevServer({
        port: config.TEMPORAL_DEV_PORT,
        uiPort: config.TEMPORAL_UI_PORT,
        dbFilename: config.TEMPORAL_DEV_DB,
        namespace: config.TEMPORAL_NAMESPACE,
        // With payloads encrypted, the UI asks our HTTP server to show them in clear.
        uiCodecEndpoint: codecEndpoint
          ? `${localHttpUrl(config.HOST, config.PORT)}/codec`
          : undefined,
        log: (line) => logger.info({ component: 'temporal-dev-server' }, line),
      });
      cleanups.push({ name: 'temporal dev server', run: () => devServer.shutdown() });
      // Without its Temporal server the stack only answers 503: say why, and stop.
      void devServer.crashed.then((output) => {
        if (stopping) return;
        logger.error(
          { component: 'temporal-dev-server', serverPid: devServer.pid, lastOutput: output },
          'the embedded Temporal dev server exited; stopping everything (start again with npm start)',
        );
        void stop(1);
      });
      temporalAddress = devServer.address;
      uiUrl = devServer.uiUrl;
    }

    const db = createDatabase(config.DATABASE_URL, { poolMax: config.DATABASE_POOL_MAX });
    cleanups.push({ name: 'database', run: () => db.close() });
    const applied = await migrateToLatest(db.db);
    logger.info({ applied }, 'database migrated');

    // The warehouse API and SMTP server, unless configured: local stand-ins (harness/partners).
    const { warehouseUrl, smtpUrl } = await startLocalPartners(config, logger, cleanups);

    // The clients' data converter; the workers make theirs from the same key, so every process
    // here reads the others' payloads.
    const dataConverter = dataConverterFor(config.PAYLOAD_ENCRYPTION_KEY);
    const connection = await NativeConnection.connect(
      nativeConnectionOptions(config.temporalConnection, { address: temporalAddress }),
    );
    cleanups.push({ name: 'worker connection', run: () => connection.close() });
    // The workers of the code being edited: their build is made current at every start, before
    // the webhook takes payments (in production the operator decides, with npm run ops -- deployment).
    const running = withWorkers
      ? await startWorkerRuntime({
          config,
          logger,
          connection,
          db,
          queues: ['payments', 'heavy'],
          currentBuild: 'always',
          partners: { warehouseUrl, smtpUrl, temporalUiUrl: config.TEMPORAL_UI_URL ?? uiUrl },
        })
      : undefined;
    if (running) cleanups.push({ name: 'workers', run: running.stop });

    const client = createLazyClient({
      dataConverter,
      address: temporalAddress,
      namespace: config.TEMPORAL_NAMESPACE,
      settings: config.temporalConnection,
    });
    cleanups.push({ name: 'client connection', run: () => client.connection.close() });
    // What `npm run temporal:setup` does, on the embedded dev server and a cluster alike: the
    // starter and the workflows set OrderId and PaymentEventId, which the server must know.
    const setup = await ensureTemporalSetup({
      connection: client.connection,
      client,
      namespace: config.TEMPORAL_NAMESPACE,
      onStep: (step) =>
        step.outcome === 'failed' || step.outcome === 'not allowed'
          ? logger.error(
              { step: step.step, outcome: step.outcome, detail: step.detail, todo: step.todo },
              'Temporal set-up incomplete: payments may be refused (configuration error; see npm run temporal:setup)',
            )
          : logger.info(
              { step: step.step, outcome: step.outcome, detail: step.detail },
              'Temporal set-up',
            ),
    });
    const scheduleFailed = setup.steps.find((s) => s.step === 'schedule' && s.outcome === 'failed');
    const metrics = createHttpMetrics({
      defaultMetrics: true,
      partnerPauses: createPartnerPausesRepository(db.db),
    });
    const app = await buildApp({
      config,
      logger,
      payments: createPaymentStarter(client, {
        startTimeoutMs: config.TEMPORAL_START_TIMEOUT_MS,
      }),
      unmatchedRepository: createUnmatchedRepository(db.db),
      // Without a key there is nothing to fetch a thin event with: the route keeps it as unmatched.
      thinEvents: config.STRIPE_API_KEY
        ? createThinEventStarter(client, { startTimeoutMs: config.TEMPORAL_START_TIMEOUT_MS })
        : undefined,
      ordersRepository: createOrdersRepository(db.db),
      paymentsRepository: createPaymentsRepository(db.db),
      metrics,
      codec: codecEndpoint,
      ordersApi,
    });
    await app.listen({ port: config.PORT, host: config.HOST });
    cleanups.push({ name: 'http server', run: () => app.close() });
    let adminUrl: string | undefined;
    if (config.ADMIN_ADDRESS !== 'off') {
      const admin = await buildAdminApp({
        logger,
        readiness: [
          databaseReadiness(db.db),
          temporalReadiness(client.connection),
          temporalSetupReadiness(client.connection, config.TEMPORAL_NAMESPACE),
          workersReadiness(
            client,
            {
              deploymentName: config.WORKER_DEPLOYMENT_NAME,
              versioned: config.WORKER_VERSIONING === 'on',
            },
            WATCHED_TASK_QUEUES,
          ),
        ],
        metrics,
      });
      adminUrl = await listenAdmin(admin, config.ADMIN_ADDRESS);
      cleanups.push({ name: 'admin listener', run: () => admin.close() });
    }
    const watchdog = startWatchdogFromConfig(
      config,
      client,
      logger,
      config.TEMPORAL_UI_URL ?? uiUrl,
      db.db,
    );
    if (watchdog) cleanups.push({ name: 'task queue watchdog', run: () => watchdog.stop() });

    const apiUrl = localHttpUrl(config.HOST, config.PORT);
    process.stdout.write(
      [
        '',
        'Order payments is running:',
        `  API              ${ordersApi.kind === 'off' ? '(ORDERS_API=off)' : `${apiUrl}/api/v1/orders (${ordersApi.kind === 'open' ? 'no key needed: development on loopback' : 'API key required'})`}`,
        `  Payment webhook  ${apiUrl}${PAYMENT_WEBHOOK_PATH}`,
        ...providerLines(config, apiUrl),
        `  Temporal         ${temporalAddress} (namespace ${config.TEMPORAL_NAMESPACE}; ${config.temporalConnection.summary})`,
        `  Temporal Web UI  ${uiUrl ?? '(not available: see docs/temporal-servers.md)'}`,
        `  Warehouse API    ${warehouseUrl}${config.WAREHOUSE_API_URL ? '' : ' (simulator)'}`,
        `  SMTP             ${config.SMTP_URL ? 'configured' : `${smtpUrl} (local sink: mails are logged)`}`,
        `  Schedules        ${scheduleFailed ? `not in place: ${scheduleFailed.detail}` : `${STOCK_AGGREGATION_SCHEDULE_ID} (stock aggregation, every 5 minutes), ${SLA_CHECK_SCHEDULE_ID} (SLA check, every minute)`}`,
        `  Database         ${config.DATABASE_URL}`,
        `  Metrics          ${adminUrl ? `${adminUrl}/metrics` : '(ADMIN_ADDRESS=off)'}${workerMetricsAddress ? `, worker http://${workerMetricsAddress}/metrics` : ''}`,
        `  Health           ${apiUrl}/healthz${adminUrl ? `, ${adminUrl}/readyz` : ''}   Check it all: npm run ops -- doctor`,
        `  Workers          ${running ? `in this process, build ${running.deployment.buildId} (made current)` : 'none (--without-workers): run builds with npm run worker and heavy-worker (docs/deploys.md)'}`,
        `  Warehouse        npm run simulate -- warehouse down|slow|reject|ratelimit|ok   switches the simulator`,
        '',
        'Try it: npm run demo [-- --provider stripe|standard]   (in another terminal)   Stop: Ctrl-C',
        '',
      ].join('\n'),
    );
    // Runs until stopped: by Ctrl-C, or (its worker failed) with the worker.
    await (running?.done ?? new Promise<void>(() => {}));
  } catch (err) {
    if (stopping) return;
    logger.error({ err }, 'failed to start');
    await stop(1);
  }
}

runMain(main);
