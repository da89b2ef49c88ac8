import { z } from 'zod';
import type { TemporalConnectionSettings } from '../temporal/connection';
import { loadTemporalConnection, TemporalSettingsError } from './temporal-connection';
import { alertFields, checkAlerts } from './alerts';
import { databaseFields } from './database';
import { developmentFields } from './development';
import { httpFields } from './http';
import { checkPartnersInProduction, partnerFields } from './partners';
import { processFields } from './process';
import { checkProvidersInProduction, finishProviders, providerFields } from './providers';
import { checkTemporalInProduction, finishTemporal, temporalFields } from './temporal';
import { checkWebhook, checkWebhookInProduction, webhookFields } from './webhook';
import { workerFields } from './workers';

export { DEFAULT_ADMIN_ADDRESS } from './http';
export { embeddedTemporalAddress } from './development';
export {
  DEFAULT_SHOP_CURRENCY,
  DEV_STANDARD_WEBHOOK_SECRET,
  DEV_STRIPE_WEBHOOK_SECRET,
} from './providers';
export { WEBHOOK_SECURITY_DEFAULTS } from './webhook';

/** Production rules refuse settings that would quietly lose or fake work (`QUEUE_CONNECTION=sync`). */
export const CONFIG_SLICES = [
  { title: 'Process', summary: 'What every process reads.', fields: processFields },
  {
    title: 'HTTP',
    summary: 'The HTTP process: its listeners, who it trusts, the orders API.',
    fields: httpFields,
  },
  {
    title: 'Webhooks',
    summary: 'The contract’s own endpoint and the hardening every webhook endpoint shares.',
    fields: webhookFields,
  },
  {
    title: 'Payment providers',
    summary: 'Stripe and Standard Webhooks senders, and the currency their payments must be in.',
    fields: providerFields,
  },
  {
    title: 'Temporal',
    summary: 'Where Temporal is and how payloads are kept there.',
    fields: temporalFields,
  },
  { title: 'Database', summary: 'The application database.', fields: databaseFields },
  {
    title: 'Partners',
    summary: 'The services the workers call: the warehouse API and the mail server.',
    fields: partnerFields,
  },
  {
    title: 'Workers',
    summary: 'The payments and heavy workers: slots, the build they declare, what they expose.',
    fields: workerFields,
  },
  {
    title: 'Alerts',
    summary: 'Who hears about failures, SLA breaches and task queues without workers.',
    fields: alertFields,
  },
  {
    title: 'Development',
    summary: 'What only `npm start` and the demos use; production sets none of them.',
    fields: developmentFields,
  },
] as const;

// The same order as CONFIG_SLICES: problems are listed in it.
const schema = z
  .object({
    ...processFields,
    ...httpFields,
    ...webhookFields,
    ...providerFields,
    ...temporalFields,
    ...databaseFields,
    ...partnerFields,
    ...workerFields,
    ...alertFields,
    ...developmentFields,
  })
  .superRefine((c, ctx) => {
    checkAlerts(c, ctx);
    checkWebhook(c, ctx);
    if (c.NODE_ENV !== 'production') return;
    checkWebhookInProduction(c, ctx);
    checkProvidersInProduction(c, ctx);
    checkTemporalInProduction(c, ctx);
    checkPartnersInProduction(c, ctx);
  })
  .transform((c) => ({ ...c, ...finishProviders(c), ...finishTemporal(c) }));

export type Config = Readonly<
  z.infer<typeof schema> & {
    /** TLS, API key and profile; the address and namespace in force are those above. */
    temporalConnection: TemporalConnectionSettings;
  }
>;

/** Thrown with every problem at once, each naming the variable and what to fix. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  // Temporal's settings are read as the Temporal CLI reads them (temporal.toml profile, then
  // TEMPORAL_* variables); the address and namespace in force then go through the checks below.
  let temporal: TemporalConnectionSettings | undefined;
  try {
    temporal = loadTemporalConnection(env);
  } catch (error) {
    if (!(error instanceof TemporalSettingsError)) throw error;
    problems.push(...error.problems);
  }
  const result = schema.safeParse(
    temporal
      ? { ...env, TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace }
      : env,
  );
  if (!result.success) {
    problems.push(
      ...result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
    );
  }
  if (problems.length > 0 || !result.success || !temporal) throw new ConfigError(problems);
  return Object.freeze({ ...result.data, temporalConnection: temporal });
}
