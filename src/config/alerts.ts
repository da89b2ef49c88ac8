import { z } from 'zod';
import { type Checked, doc, integer, optionalUrl } from './fields';

/** Who hears about failures, SLA breaches and queues without workers, and how often. */
export const alertFields = {
  ALERT_WEBHOOK_URL: doc(
    optionalUrl(),
    'where alerts are POSTed (Slack-compatible JSON); unset: alerts are logged only',
    'unset',
  ),
  ALERT_DIGEST_WINDOW_SECONDS: doc(
    integer(1, 86_400).default(300),
    'failures of one cause are posted as one digest: the first at once, the rest at most once per this window (also how often the digest checks whether they were retried)',
  ),
  ALERT_DIGEST_QUIET_SECONDS: doc(
    integer(1, 7 * 86_400).default(1800),
    'an incident with no failure of its cause for this long is resolved (one post); at least the window',
  ),
  FULFILMENT_SLA_SECONDS: doc(
    integer(60, 30 * 86_400).default(3600),
    'a paid order not handed to the warehouse within this long raises one SLA alert (`FulfilmentSlaBreached`), resolved when none is late; checked once a minute',
  ),
  PAYMENT_SLA_SECONDS: doc(
    integer(60, 30 * 86_400).default(300),
    'a payment workflow still running after this long raises one SLA alert (`PaymentSlaBreached`)',
  ),
  TASK_QUEUE_NO_POLLER_ALERT_SECONDS: doc(
    z.coerce
      .number()
      .int()
      .refine((v) => v === 0 || (v >= 90 && v <= 86_400), {
        message:
          'must be 0 (off) or 90-86400: an idle worker renews its poll about once a minute, so less would alert on healthy workers',
      })
      .default(120),
    'alert when no worker has polled a task queue for this long; `0` turns the watchdog off (an idle worker renews its poll about once a minute, so less than 90 would alert on healthy ones)',
  ),
  TASK_QUEUE_WATCHDOG_INTERVAL_SECONDS: doc(
    integer(5, 3600).default(30),
    'how often the HTTP process’s watchdog asks Temporal about the task queues’ pollers',
  ),
};

export function checkAlerts(c: Checked<typeof alertFields>, ctx: z.RefinementCtx): void {
  if (c.ALERT_DIGEST_QUIET_SECONDS < c.ALERT_DIGEST_WINDOW_SECONDS) {
    ctx.addIssue({
      code: 'custom',
      path: ['ALERT_DIGEST_QUIET_SECONDS'],
      message: 'must be at least ALERT_DIGEST_WINDOW_SECONDS: quiet is checked once a window',
    });
  }
}
