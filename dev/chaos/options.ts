import { type Command, Option } from 'commander';
import {
  createTool,
  parseTool,
  type ToolLine,
  UsageError,
  wholeNumber,
} from '../../src/cli/command-line';

/**
 * What a chaos run does, and how big it is. Two presets: `full` for `npm run chaos` (about five
 * minutes) and `small` for CI (dev/chaos/chaos.test.ts, under a minute and a half). Every value
 * can be changed by a flag or an environment variable (flag wins), e.g.
 * `npm run chaos -- --events 50` or `CHAOS_EVENTS=50 npm run chaos`.
 */
export interface ChaosOptions {
  /** Payment events (distinct event IDs) delivered by the provider. */
  events: number;
  /** Share of orders paid twice (two distinct events: a double charge, flagged for review). */
  doubleChargeRate: number;
  /** Customers the orders belong to (loyalty balances are per customer). */
  users: number;
  /** Worker processes running side by side on the task queue. */
  workers: number;
  /** Workers of task queue `heavy` (invoices), when the system has them (src/heavy-worker.ts). */
  heavyWorkers: number;
  /** Events are first delivered at random moments within this window. */
  deliveryWindowMs: number;
  /** Chaos actions are spread over the delivery window plus this tail. */
  chaosTailMs: number;
  /** SIGKILLs of a random worker (payments or heavy) at a random moment. */
  workerKills: number;
  /** SIGKILLs right after a payment row committed, before recordPayment returned. */
  commitKills: number;
  /** SIGKILLs right after the warehouse answered 201, before notifyWarehouse returned. */
  warehouseKills: number;
  /** SIGKILLs after the SMTP server accepted the confirmation, before it was stamped. */
  mailKills: number;
  /** SIGKILLs of the Temporal server, restarted on the same port and SQLite file. */
  serverRestarts: number;
  serverDownMs: [number, number];
  /** Immediate stops of PostgreSQL, started again after a while. */
  dbOutages: number;
  dbDownMs: [number, number];
  /** How long, after the last chaos action, every workflow has to complete. */
  convergenceTimeoutMs: number;
  /** How long a worker frozen at an armed moment waits for its SIGKILL before carrying on. */
  holdMs: number;
  /** A worker is restarted this long after it died (a process manager's restart delay). */
  restartDelayMs: number;
  /** Count duplicate mails (same Message-ID) as failures too. */
  strictMail: boolean;
  seed: number;
  /** Keep the run directory (logs are always kept; this also keeps the databases). */
  keep: boolean;
}

export type Size = 'small' | 'full';

export const PRESETS: Record<Size, Omit<ChaosOptions, 'seed' | 'keep' | 'strictMail'>> = {
  small: {
    events: 20,
    doubleChargeRate: 0.1,
    users: 3,
    workers: 2,
    heavyWorkers: 1,
    deliveryWindowMs: 8_000,
    chaosTailMs: 6_000,
    workerKills: 1,
    commitKills: 1,
    warehouseKills: 0,
    mailKills: 0,
    serverRestarts: 1,
    serverDownMs: [1_000, 2_000],
    dbOutages: 1,
    dbDownMs: [3_000, 4_000],
    convergenceTimeoutMs: 45_000,
    holdMs: 5_000,
    restartDelayMs: 500,
  },
  full: {
    events: 300,
    doubleChargeRate: 0.05,
    users: 20,
    workers: 2,
    heavyWorkers: 1,
    deliveryWindowMs: 60_000,
    chaosTailMs: 30_000,
    workerKills: 6,
    commitKills: 4,
    warehouseKills: 2,
    mailKills: 2,
    serverRestarts: 2,
    serverDownMs: [2_000, 5_000],
    dbOutages: 2,
    dbDownMs: [4_000, 8_000],
    convergenceTimeoutMs: 180_000,
    holdMs: 5_000,
    restartDelayMs: 1_000,
  },
};

interface Knob {
  flag: string;
  env: string;
  key: keyof ChaosOptions;
  kind: 'int' | 'fraction' | 'range' | 'bool';
  help: string;
}

const KNOBS: Knob[] = [
  { flag: 'events', env: 'CHAOS_EVENTS', key: 'events', kind: 'int', help: 'payment events' },
  {
    flag: 'double-charge-rate',
    env: 'CHAOS_DOUBLE_CHARGE_RATE',
    key: 'doubleChargeRate',
    kind: 'fraction',
    help: 'share of orders paid twice',
  },
  { flag: 'users', env: 'CHAOS_USERS', key: 'users', kind: 'int', help: 'customers' },
  { flag: 'workers', env: 'CHAOS_WORKERS', key: 'workers', kind: 'int', help: 'worker processes' },
  {
    flag: 'heavy-workers',
    env: 'CHAOS_HEAVY_WORKERS',
    key: 'heavyWorkers',
    kind: 'int',
    help: 'heavy (invoice) worker processes',
  },
  {
    flag: 'delivery-window-ms',
    env: 'CHAOS_DELIVERY_WINDOW_MS',
    key: 'deliveryWindowMs',
    kind: 'int',
    help: 'first deliveries spread over this window',
  },
  {
    flag: 'chaos-tail-ms',
    env: 'CHAOS_TAIL_MS',
    key: 'chaosTailMs',
    kind: 'int',
    help: 'chaos goes on this long after the delivery window',
  },
  {
    flag: 'worker-kills',
    env: 'CHAOS_WORKER_KILLS',
    key: 'workerKills',
    kind: 'int',
    help: 'SIGKILLs of a worker at random moments',
  },
  {
    flag: 'commit-kills',
    env: 'CHAOS_COMMIT_KILLS',
    key: 'commitKills',
    kind: 'int',
    help: 'SIGKILLs after a payment row commits, before recordPayment returns',
  },
  {
    flag: 'warehouse-kills',
    env: 'CHAOS_WAREHOUSE_KILLS',
    key: 'warehouseKills',
    kind: 'int',
    help: 'SIGKILLs after the warehouse answered 201',
  },
  {
    flag: 'mail-kills',
    env: 'CHAOS_MAIL_KILLS',
    key: 'mailKills',
    kind: 'int',
    help: 'SIGKILLs after SMTP accepted a mail, before its stamp',
  },
  {
    flag: 'server-restarts',
    env: 'CHAOS_SERVER_RESTARTS',
    key: 'serverRestarts',
    kind: 'int',
    help: 'SIGKILL + restart of the Temporal server',
  },
  {
    flag: 'server-down-ms',
    env: 'CHAOS_SERVER_DOWN_MS',
    key: 'serverDownMs',
    kind: 'range',
    help: 'Temporal stays down this long (min-max)',
  },
  {
    flag: 'db-outages',
    env: 'CHAOS_DB_OUTAGES',
    key: 'dbOutages',
    kind: 'int',
    help: 'immediate stops of PostgreSQL',
  },
  {
    flag: 'db-down-ms',
    env: 'CHAOS_DB_DOWN_MS',
    key: 'dbDownMs',
    kind: 'range',
    help: 'PostgreSQL stays down this long (min-max)',
  },
  {
    flag: 'convergence-timeout-ms',
    env: 'CHAOS_CONVERGENCE_TIMEOUT_MS',
    key: 'convergenceTimeoutMs',
    kind: 'int',
    help: 'time for every workflow to complete after the chaos',
  },
  {
    flag: 'strict-mail',
    env: 'CHAOS_STRICT_MAIL',
    key: 'strictMail',
    kind: 'bool',
    help: 'duplicate mails with the same Message-ID fail the run too',
  },
  { flag: 'seed', env: 'CHAOS_SEED', key: 'seed', kind: 'int', help: 'seed of the plan' },
  {
    flag: 'keep',
    env: 'CHAOS_KEEP',
    key: 'keep',
    kind: 'bool',
    help: 'keep the databases in the run directory',
  },
];

/** A knob's meaning, with what each size sets it to and its environment variable. */
function describe(knob: Knob): string {
  const preset = (size: Size) => PRESETS[size][knob.key as keyof (typeof PRESETS)[Size]];
  const shown = (value: unknown) => (Array.isArray(value) ? value.join('-') : String(value));
  const sizes =
    knob.key in PRESETS.full
      ? `full ${shown(preset('full'))}, small ${shown(preset('small'))}; `
      : '';
  return `${knob.help} (${sizes}env ${knob.env})`;
}

// A new one each parse: commander keeps the option values of a parse on the command.
function commandLine(): Command {
  const program = createTool(
    'npm run chaos --',
    'The chaos run (docs/chaos.md): payment events delivered while workers, the Temporal ' +
      'server and PostgreSQL are killed, then every invariant checked. Every knob is a flag or ' +
      'an environment variable (the flag wins).',
  ).addOption(
    new Option('--size <size>', 'the preset, full unless set (env CHAOS_SIZE)').choices([
      'full',
      'small',
    ]),
  );
  for (const knob of KNOBS) {
    // A boolean knob is --keep alone, or --keep=true|false as its variable takes.
    const value =
      knob.kind === 'bool' ? '[true|false]' : knob.kind === 'range' ? '<ms[-ms]>' : '<n>';
    program.option(`--${knob.flag} ${value}`, describe(knob));
  }
  return program.addHelpText(
    'after',
    '\nExits 0 when every invariant held, 1 when one failed, 2 when the run could not be made,\n' +
      '130 when interrupted.',
  );
}

/** Options for a size, with any overrides; a fresh random seed unless one is given. */
export function chaosOptions(size: Size, overrides: Partial<ChaosOptions> = {}): ChaosOptions {
  return {
    ...PRESETS[size],
    seed: Math.floor(Math.random() * 2 ** 31),
    keep: false,
    strictMail: false,
    ...overrides,
  };
}

/**
 * Reads `--size` and the knobs from argv, then the environment (a flag wins); `--help` and a wrong
 * command line or variable come back as the exit code.
 */
export async function readChaosOptions(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<ToolLine<ChaosOptions>> {
  return parseTool(
    commandLine(),
    (_args, flags) => {
      const overrides: Partial<ChaosOptions> = {};
      const set = (key: keyof ChaosOptions, value: unknown) =>
        Object.assign(overrides, { [key]: value });
      for (const knob of KNOBS) {
        const value = env[knob.env];
        if (value !== undefined && value !== '') set(knob.key, parseValue(knob, value, knob.env));
      }
      for (const knob of KNOBS) {
        // camelCase of the flag, as commander names it: --double-charge-rate is doubleChargeRate.
        const value = flags[knob.key] as string | true | undefined;
        if (value === true) set(knob.key, true);
        else if (value !== undefined) set(knob.key, parseValue(knob, value, `--${knob.flag}`));
      }
      const size = (flags.size as string | undefined) ?? env.CHAOS_SIZE ?? 'full';
      if (size !== 'full' && size !== 'small')
        throw new UsageError(`CHAOS_SIZE must be full or small (got ${size}).`);
      return chaosOptions(size, overrides);
    },
    argv,
  );
}

function parseValue(knob: Knob, value: string, source: string): unknown {
  switch (knob.kind) {
    case 'bool':
      if (!['true', 'false', '1', '0'].includes(value))
        throw new UsageError(`${source} must be true or false.`);
      return value === 'true' || value === '1';
    case 'int':
      return wholeNumber(source, value);
    case 'fraction': {
      const n = Number(value);
      if (!(n >= 0 && n <= 1)) throw new UsageError(`${source} must be a number from 0 to 1.`);
      return n;
    }
    case 'range': {
      const parts = value.split('-').map(Number);
      const [min, max = min] = parts;
      if (
        parts.length > 2 ||
        min === undefined ||
        max === undefined ||
        !Number.isInteger(min) ||
        !Number.isInteger(max) ||
        min < 0 ||
        max < min
      ) {
        throw new UsageError(`${source} must be milliseconds, or a range such as 3000-6000.`);
      }
      return [min, max];
    }
  }
}
