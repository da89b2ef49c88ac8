import type { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { errorMessage } from '../monitoring/probes';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../shared/search-attributes';
import { grpcCode } from './grpc-status';
import { ensureSlaCheckSchedule, ensureStockAggregationSchedule } from './schedules';

const { IndexedValueType } = temporal.api.enums.v1;

const [NOT_FOUND, ALREADY_EXISTS] = [5, 6];
/** PERMISSION_DENIED, UNIMPLEMENTED: this cluster does not let this client do it (Temporal Cloud). */
const NOT_ALLOWED = new Set([7, 12]);

export const DEFAULT_RETENTION_DAYS = 30;

type Services = Pick<Connection, 'workflowService' | 'operatorService' | 'withDeadline'>;

export interface SetupStep {
  step: 'namespace' | 'search attributes' | 'schedule';
  outcome: 'present' | 'created' | 'not allowed' | 'failed' | 'skipped';
  detail: string;
  todo?: string[];
}

export interface SetupOptions {
  connection: Services;
  client?: Client;
  namespace: string;
  retentionDays?: number;
  /** A cluster refreshes its namespace cache every few seconds: how long to wait for it. */
  settleTimeoutMs?: number;
  onStep?: (step: SetupStep) => void;
}

/**
 * A start that sets an unregistered search attribute is refused: every webhook would get 503.
 * Idempotent, safe from several processes at once; never throws for a step.
 */
export async function ensureTemporalSetup(
  options: SetupOptions,
): Promise<{ ok: boolean; steps: SetupStep[] }> {
  const steps: SetupStep[] = [];
  const record = (step: SetupStep) => {
    steps.push(step);
    options.onStep?.(step);
    return step;
  };
  const namespace = record(await ensureNamespace(options));
  if (namespace.outcome === 'failed' || namespace.outcome === 'not allowed') {
    const reason = `namespace ${options.namespace} is not available`;
    record({ step: 'search attributes', outcome: 'skipped', detail: reason });
    record({ step: 'schedule', outcome: 'skipped', detail: reason });
    return { ok: false, steps };
  }
  const attributes = record(await ensureSearchAttributes(options));
  const client = options.client;
  if (!client) record({ step: 'schedule', outcome: 'skipped', detail: 'no client given' });
  for (const ensure of client ? [ensureStockAggregationSchedule, ensureSlaCheckSchedule] : []) {
    try {
      const { scheduleId, created } = await ensure(client!);
      const detail = `${scheduleId}${created ? '' : ' (brought up to date)'}`;
      record({ step: 'schedule', outcome: created ? 'created' : 'present', detail });
    } catch (error) {
      record({ step: 'schedule', outcome: 'failed', detail: errorMessage(error) });
    }
  }
  // Attributes this client may not register (Cloud) can still exist: readiness checks them.
  const ok = steps.every((s) => s.outcome !== 'failed') && attributes.outcome !== 'not allowed';
  return { ok, steps };
}

async function ensureNamespace(options: SetupOptions): Promise<SetupStep> {
  const { connection, namespace } = options;
  const retentionDays = options.retentionDays ?? DEFAULT_RETENTION_DAYS;
  try {
    const described = await call(connection, () =>
      connection.workflowService.describeNamespace({ namespace }),
    );
    return {
      step: 'namespace',
      outcome: 'present',
      detail: describeRetention(namespace, described),
    };
  } catch (error) {
    if (grpcCode(error) !== NOT_FOUND) {
      return { step: 'namespace', outcome: 'failed', detail: errorMessage(error) };
    }
  }
  try {
    await call(connection, () =>
      connection.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: msToTs(`${retentionDays} days`),
        description: 'order payments (created by npm run temporal:setup)',
      }),
    );
  } catch (error) {
    if (grpcCode(error) !== ALREADY_EXISTS) {
      return refused(
        'namespace',
        error,
        `${namespace} does not exist and cannot be created from here`,
        [
          `temporal operator namespace create --namespace ${namespace} --retention ${retentionDays}d`,
          'on Temporal Cloud: create it in the Cloud UI or with tcld, then run this again',
        ],
      );
    }
  }
  const usable = await settle(options, async () => {
    await connection.operatorService.listSearchAttributes({ namespace });
    return true;
  });
  return {
    step: 'namespace',
    outcome: usable ? 'created' : 'failed',
    detail: usable
      ? `${namespace} (retention ${retentionDays} d)`
      : `${namespace} was registered but is not usable yet; run this again in a minute`,
  };
}

/** A step the cluster refused: `not allowed` when it never lets this client do it. */
function refused(step: SetupStep['step'], error: unknown, what: string, todo: string[]): SetupStep {
  const code = grpcCode(error);
  const outcome = code !== undefined && NOT_ALLOWED.has(code) ? 'not allowed' : 'failed';
  return { step, outcome, detail: `${what}: ${errorMessage(error)}`, todo };
}

const ON_CLOUD =
  'on Temporal Cloud: add them in the namespace settings of the Cloud UI, or with tcld';

async function ensureSearchAttributes(options: SetupOptions): Promise<SetupStep> {
  const { connection, namespace } = options;
  const step = 'search attributes';
  let state: SearchAttributeState;
  try {
    state = await searchAttributeState(connection, namespace);
  } catch (error) {
    const all = CUSTOM_SEARCH_ATTRIBUTES.map((k) => k.name);
    return refused(step, error, 'cannot list search attributes', [
      ...registerCommands(namespace, all),
      ON_CLOUD,
    ]);
  }
  if (state.wrongType.length > 0) {
    return {
      step,
      outcome: 'failed',
      detail: state.wrongType.join('; '),
      todo: ['a name registered with another type must be removed by the cluster admin'],
    };
  }
  if (state.missing.length === 0) {
    const names = CUSTOM_SEARCH_ATTRIBUTES.map((k) => `${k.name} (${k.type})`).join(', ');
    return { step, outcome: 'present', detail: names };
  }
  const missing = state.missing.join(', ');
  try {
    await call(connection, () =>
      connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: Object.fromEntries(
          CUSTOM_SEARCH_ATTRIBUTES.filter((k) => state.missing.includes(k.name)).map((k) => [
            k.name,
            IndexedValueType[`INDEXED_VALUE_TYPE_${k.type}`],
          ]),
        ),
      }),
    );
  } catch (error) {
    // ALREADY_EXISTS: another process registered them meanwhile.
    if (grpcCode(error) !== ALREADY_EXISTS) {
      const todo = [...registerCommands(namespace, state.missing), ON_CLOUD];
      return refused(step, error, `cannot register ${missing}`, todo);
    }
  }
  const registered = await settle(
    options,
    async () => (await searchAttributeState(connection, namespace)).missing.length === 0,
  );
  return registered
    ? { step, outcome: 'created', detail: `registered ${missing}` }
    : {
        step,
        outcome: 'failed',
        detail: `registered ${missing}, but the server does not list them yet; run this again in a minute`,
      };
}

type SearchAttributeState = { missing: string[]; wrongType: string[] };

async function searchAttributeState(
  connection: Services,
  namespace: string,
): Promise<SearchAttributeState> {
  const response = await call(connection, () =>
    connection.operatorService.listSearchAttributes({ namespace }),
  );
  return compareSearchAttributes(response.customAttributes ?? {});
}

export function compareSearchAttributes(
  registered: Record<string, temporal.api.enums.v1.IndexedValueType>,
): SearchAttributeState {
  const missing: string[] = [];
  const wrongType: string[] = [];
  for (const key of CUSTOM_SEARCH_ATTRIBUTES) {
    const actual = registered[key.name];
    if (actual === undefined) missing.push(key.name);
    else if (actual !== IndexedValueType[`INDEXED_VALUE_TYPE_${key.type}`]) {
      wrongType.push(
        `${key.name} is registered as ${IndexedValueType[actual] ?? actual}, not ${key.type}`,
      );
    }
  }
  return { missing, wrongType };
}

export function registerCommands(namespace: string, names: readonly string[]): string[] {
  return CUSTOM_SEARCH_ATTRIBUTES.filter((k) => names.includes(k.name)).map((k) => {
    // The CLI's --type spelling: KEYWORD_LIST is KeywordList.
    const type = k.type.toLowerCase().replace(/(?:^|_)(\w)/g, (_, c: string) => c.toUpperCase());
    return `temporal operator search-attribute create --namespace ${namespace} --name ${k.name} --type ${type}`;
  });
}

/**
 * Without the search attributes no payment can start. Only a success is cached, so running the
 * set-up makes the process ready at once.
 */
export function temporalSetupReadiness(
  connection: Services,
  namespace: string,
  now: () => number = Date.now,
): { name: string; explain: true; check: (deadline: number) => Promise<void> } {
  let okUntil = 0;
  return {
    name: 'temporal setup',
    explain: true,
    check: async (deadline) => {
      if (now() < okUntil) return;
      let state: SearchAttributeState;
      try {
        state = await connection.withDeadline(deadline, () =>
          searchAttributeState(connection, namespace),
        );
      } catch (error) {
        const code = grpcCode(error);
        if (code !== undefined && NOT_ALLOWED.has(code)) return;
        if (code === NOT_FOUND) {
          throw new Error(`namespace ${namespace} does not exist: run npm run temporal:setup`);
        }
        throw error;
      }
      if (state.wrongType.length > 0) {
        throw new Error(`${state.wrongType.join('; ')}: the cluster admin must fix it`);
      }
      if (state.missing.length > 0) {
        throw new Error(
          `search attributes not registered in ${namespace}: ${state.missing.join(', ')} (payments cannot start): run npm run temporal:setup`,
        );
      }
      okUntil = now() + 60_000;
    },
  };
}

/** A hung cluster fails the step instead of hanging the command. */
function call<T>(connection: Services, fn: () => Promise<T>): Promise<T> {
  return connection.withDeadline(Date.now() + 10_000, fn);
}

async function settle(options: SetupOptions, ready: () => Promise<boolean>): Promise<boolean> {
  const until = Date.now() + (options.settleTimeoutMs ?? 30_000);
  for (;;) {
    try {
      if (await call(options.connection, ready)) return true;
    } catch {
      // Not yet: still propagating.
    }
    if (Date.now() >= until) return false;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

export function describeRetention(
  namespace: string,
  described: temporal.api.workflowservice.v1.IDescribeNamespaceResponse,
): string {
  const ttl = described.config?.workflowExecutionRetentionTtl;
  const days = ttl?.seconds ? Number(ttl.seconds.toString()) / 86_400 : undefined;
  return `${namespace}${days === undefined ? '' : ` (retention ${+days.toFixed(1)} d)`}`;
}
