import type { Client, Connection } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../shared/search-attributes';
import { grpcCode } from './connection-diagnosis';
import { ensureSlaCheckSchedule, ensureStockAggregationSchedule } from './schedules';

/**
 * What this app needs registered on a Temporal cluster before it can take a payment, and the one
 * idempotent routine that registers it (`npm run temporal:setup`, and `npm start` on every
 * start): the namespace (where the cluster lets us create one), the custom search attributes the
 * starter and the workflows set (a start that sets an unknown one is refused with
 * INVALID_ARGUMENT: every webhook would get 503), and the stock aggregation schedule.
 */

const { IndexedValueType } = temporal.api.enums.v1;

/** gRPC statuses that mean "this cluster does not let this client do that" (Temporal Cloud). */
const NOT_FOUND = 5;
const ALREADY_EXISTS = 6;
const PERMISSION_DENIED = 7;
const UNIMPLEMENTED = 12;
const NOT_ALLOWED = new Set([PERMISSION_DENIED, UNIMPLEMENTED]);

/** Retention of a namespace this routine creates; see docs/operations.md, "Production Temporal". */
export const DEFAULT_RETENTION_DAYS = 30;

/** How `temporal operator search-attribute create --type` names each type. */
export const CLI_TYPE_NAMES: Record<SearchAttributeType, string> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

type Services = Pick<Connection, 'workflowService' | 'operatorService' | 'withDeadline'>;

export type SetupOutcome = 'present' | 'created' | 'not allowed' | 'failed' | 'skipped';

export interface SetupStep {
  step: 'namespace' | 'search attributes' | 'schedule';
  outcome: SetupOutcome;
  detail: string;
  /** For `not allowed` and `failed`: what a person must do instead. */
  todo?: string[];
}

export interface SetupOptions {
  /** The connection's services (a client Connection or a worker's NativeConnection). */
  connection: Services;
  /** A client on that connection and namespace, for the schedule; none: the schedule is skipped. */
  client?: Client;
  namespace: string;
  /** Retention of a namespace created here, in days. */
  retentionDays?: number;
  /**
   * How long to wait for a namespace or search attribute just registered to be usable: a cluster
   * refreshes its namespace cache every few seconds.
   */
  settleTimeoutMs?: number;
  /** Each step as it completes (the CLI prints them). */
  onStep?: (step: SetupStep) => void;
}

/**
 * Registers what is missing and leaves what exists alone: safe to run on every start, from
 * several processes at once, and on a cluster that forbids some of it (Temporal Cloud creates
 * namespaces and may register search attributes only through its own console or `tcld`): those
 * steps come back `not allowed` with what to do instead. Never throws for a step; the result
 * lists each step and `ok` says whether the app can run.
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
  if (!options.client) {
    record({ step: 'schedule', outcome: 'skipped', detail: 'no client given' });
  } else {
    for (const ensure of [ensureStockAggregationSchedule, ensureSlaCheckSchedule]) {
      try {
        const schedule = await ensure(options.client);
        record({
          step: 'schedule',
          outcome: schedule.created ? 'created' : 'present',
          detail: `${schedule.scheduleId}${schedule.created ? '' : ' (brought up to date)'}`,
        });
      } catch (error) {
        record({ step: 'schedule', outcome: 'failed', detail: messageOf(error) });
      }
    }
  }
  // Search attributes that may not be registered here (Cloud) can still exist: readiness checks them.
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
      return { step: 'namespace', outcome: 'failed', detail: messageOf(error) };
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
    const code = grpcCode(error);
    if (code !== ALREADY_EXISTS) {
      return {
        step: 'namespace',
        outcome: code !== undefined && NOT_ALLOWED.has(code) ? 'not allowed' : 'failed',
        detail: `${namespace} does not exist and cannot be created from here: ${messageOf(error)}`,
        todo: [
          `temporal operator namespace create --namespace ${namespace} --retention ${retentionDays}d`,
          'on Temporal Cloud: create it in the Cloud UI or with tcld, then run this again',
        ],
      };
    }
  }
  // A cluster's frontends learn of a new namespace on their next cache refresh.
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

async function ensureSearchAttributes(options: SetupOptions): Promise<SetupStep> {
  const { connection, namespace } = options;
  const todo = registerCommands(
    namespace,
    CUSTOM_SEARCH_ATTRIBUTES.map((k) => k.name),
  );
  let state: SearchAttributeState;
  try {
    state = await searchAttributeState(connection, namespace);
  } catch (error) {
    const code = grpcCode(error);
    if (code !== undefined && NOT_ALLOWED.has(code)) {
      return {
        step: 'search attributes',
        outcome: 'not allowed',
        detail: `this cluster does not let this client list search attributes: ${messageOf(error)}`,
        todo: [
          ...todo,
          'on Temporal Cloud: add them in the namespace settings of the Cloud UI, or with tcld',
        ],
      };
    }
    return { step: 'search attributes', outcome: 'failed', detail: messageOf(error), todo };
  }
  if (state.wrongType.length > 0) {
    return {
      step: 'search attributes',
      outcome: 'failed',
      detail: state.wrongType.join('; '),
      todo: ['a name registered with another type must be removed by the cluster admin'],
    };
  }
  const names = CUSTOM_SEARCH_ATTRIBUTES.map((k) => `${k.name} (${k.type})`).join(', ');
  if (state.missing.length === 0) {
    return { step: 'search attributes', outcome: 'present', detail: names };
  }
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
    const code = grpcCode(error);
    // Another process registered them meanwhile: fine.
    if (code !== ALREADY_EXISTS) {
      return {
        step: 'search attributes',
        outcome: code !== undefined && NOT_ALLOWED.has(code) ? 'not allowed' : 'failed',
        detail: `cannot register ${state.missing.join(', ')}: ${messageOf(error)}`,
        todo: [
          ...registerCommands(namespace, state.missing),
          'on Temporal Cloud: add them in the namespace settings of the Cloud UI, or with tcld',
        ],
      };
    }
  }
  const registered = await settle(
    options,
    async () => (await searchAttributeState(connection, namespace)).missing.length === 0,
  );
  return registered
    ? {
        step: 'search attributes',
        outcome: 'created',
        detail: `registered ${state.missing.join(', ')}`,
      }
    : {
        step: 'search attributes',
        outcome: 'failed',
        detail: `registered ${state.missing.join(', ')}, but the server does not list them yet; run this again in a minute`,
      };
}

export interface SearchAttributeState {
  missing: string[];
  wrongType: string[];
}

async function searchAttributeState(
  connection: Services,
  namespace: string,
): Promise<SearchAttributeState> {
  const response = await call(connection, () =>
    connection.operatorService.listSearchAttributes({ namespace }),
  );
  return compareSearchAttributes(response.customAttributes ?? {});
}

/** The app's search attributes that a namespace lacks, or has under another type. */
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

/** The Temporal CLI commands that register these search attributes. */
export function registerCommands(namespace: string, names: readonly string[]): string[] {
  return CUSTOM_SEARCH_ATTRIBUTES.filter((k) => names.includes(k.name)).map(
    (k) =>
      `temporal operator search-attribute create --namespace ${namespace} --name ${k.name} --type ${CLI_TYPE_NAMES[k.type]}`,
  );
}

/** How often the readiness check asks again once everything was registered. */
const SETUP_RECHECK_MS = 60_000;

/**
 * A readiness check (the shape of src/http/health.ts's ReadinessCheck): fails, with the reason
 * in its error, while the search attributes the app sets are not registered. Without them every
 * payment start is refused (INVALID_ARGUMENT), so the process must not count as ready: a load
 * balancer or a rollout should see it. A success is remembered for a minute (probes come every
 * few seconds and registrations do not disappear); a failure is asked again on every probe, so
 * running the set-up makes the process ready at once. Where the cluster does not let this
 * client list search attributes (Temporal Cloud without the permission), it cannot tell, and
 * does not block.
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
      okUntil = now() + SETUP_RECHECK_MS;
    },
  };
}

/** One call under a deadline: a hung cluster fails the step instead of hanging the command. */
const CALL_TIMEOUT_MS = 10_000;
function call<T>(connection: Services, fn: () => Promise<T>): Promise<T> {
  return connection.withDeadline(Date.now() + CALL_TIMEOUT_MS, fn);
}

async function settle(options: SetupOptions, ready: () => Promise<boolean>): Promise<boolean> {
  const until = Date.now() + (options.settleTimeoutMs ?? 30_000);
  for (;;) {
    try {
      if (await call(options.connection, ready)) return true;
    } catch {
      // Not yet: the namespace or the attribute is still propagating.
    }
    if (Date.now() >= until) return false;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

function describeRetention(
  namespace: string,
  described: temporal.api.workflowservice.v1.IDescribeNamespaceResponse,
): string {
  const ttl = described.config?.workflowExecutionRetentionTtl;
  const days = ttl?.seconds ? Number(ttl.seconds.toString()) / 86_400 : undefined;
  return `${namespace}${days === undefined ? '' : ` (retention ${+days.toFixed(1)} d)`}`;
}

function messageOf(error: unknown): string {
  const text = (error as { message?: unknown } | null)?.message;
  return typeof text === 'string' ? text : String(error);
}
