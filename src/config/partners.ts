import { z } from 'zod';
import { type Checked, doc, integer, optionalUrl } from './fields';

/** The services the workers call: the warehouse API and the mail server. */
export const partnerFields = {
  WAREHOUSE_API_URL: doc(
    optionalUrl(),
    'the warehouse partner’s API; required in production. Unset: `npm start` runs the warehouse simulator',
    'unset',
  ),
  WAREHOUSE_TIMEOUT_MS: doc(
    integer(100, 7_000).default(5_000),
    'a warehouse call that takes longer is abandoned and retried; below the warehouse activity’s 8 s start-to-close timeout',
  ),
  SMTP_URL: doc(
    optionalUrl(),
    'mail server for order confirmations (`smtp://user:pass@host:587`); required in production. Unset: `npm start` runs a local SMTP sink that logs each mail',
    'unset',
  ),
  MAIL_FROM: doc(
    z.string().min(3).default('Order Payments <orders@order-payments.local>'),
    'sender of order confirmations; its domain also names the deterministic Message-IDs',
  ),
  SMTP_MAX_CONNECTIONS: doc(
    integer(1, 100).default(5),
    'SMTP connections one payments worker keeps open and reuses for confirmations (nodemailer’s pool); a mail waits for a free one within its 8 s',
  ),
};

export function checkPartnersInProduction(
  c: Checked<typeof partnerFields>,
  ctx: z.RefinementCtx,
): void {
  if (!c.SMTP_URL) {
    ctx.addIssue({
      code: 'custom',
      path: ['SMTP_URL'],
      message:
        'set it in production (smtp://user:pass@host:587); the local SMTP sink is for development only',
    });
  }
  if (!c.WAREHOUSE_API_URL) {
    ctx.addIssue({
      code: 'custom',
      path: ['WAREHOUSE_API_URL'],
      message: 'set it in production; the warehouse simulator is for development only',
    });
  }
}
