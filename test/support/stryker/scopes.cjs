// @ts-check
/**
 * The modules under mutation, in four scopes, each with its own baseline so that one scope can
 * be run (and its results kept) without the others: `MUTATE_SCOPE=<scope> npx stryker run`.
 * `npm run mutate` runs them in turn (test/support/stryker/mutate.mjs). Each scope's tests are
 * listed in test/support/stryker/jest.config.js.
 */
exports.scopes = {
  // Insert-or-get of a payment, the first-payment claim, the loyalty ledger; the refund and
  // dispute event ledgers, the settlement claim and the unmatched inbox (issue 25).
  // The pieces they share: the chain stamp, the refund and dispute ledgers' matching, and the
  // foreign key's refusal (issue 28); recordPayment's transaction, out of payments.ts.
  repositories: [
    'src/db/repositories/payments.ts',
    'src/db/repositories/record-payment.ts',
    'src/db/repositories/handled-stamp.ts',
    'src/db/repositories/event-ledger.ts',
    'src/db/repositories/foreign-key.ts',
    'src/db/repositories/orders.ts',
    'src/db/repositories/loyalty.ts',
    'src/db/repositories/refunds.ts',
    'src/db/repositories/disputes.ts',
    'src/db/repositories/settlements.ts',
    'src/db/repositories/unmatched.ts',
  ],
  // Webhook authentication and intake, up to the workflow start.
  intake: [
    'src/http/signature.ts',
    'src/http/webhook-auth.ts',
    'src/http/routes/payment-webhook.ts',
    'src/temporal/payment-starter.ts',
    // Each provider's signature check and the mapping of its events to payments.
    'src/http/providers/provider.ts',
    'src/http/providers/stripe-signature.ts',
    'src/http/providers/standard-signature.ts',
    'src/http/providers/original.ts',
    'src/http/providers/stripe.ts',
    'src/http/providers/stripe-objects.ts',
    'src/http/providers/standard-webhooks.ts',
    'src/http/providers/payment-fields.ts',
    'src/http/providers/index.ts',
    // Issue 25: a verified event to its payment, refund or dispute start or to the unmatched
    // inbox; the events' contract; the start of a Stripe thin event's fetch.
    'src/http/providers/delivery.ts',
    'src/shared/payment-events.ts',
    'src/shared/thin-event.ts',
    'src/temporal/thin-event-starter.ts',
  ],
  // The failure types and retry presets, the failure that asks for a given wait, the
  // confirmation_sent_at guard of the mail, and the refund and dispute activities.
  activities: [
    'src/shared/errors.ts',
    'src/shared/retry-policies.ts',
    'src/activities/retry-by-cause.ts',
    'src/activities/mail-activities.ts',
    // What the refund and dispute workflows and the order workflow do about them (issue 25).
    'src/activities/refund-activities.ts',
    'src/activities/dispute-activities.ts',
    // What they share with the payment's activities (issue 28 point 8): the hand-over to the
    // order's workflow, and the order lookup that fails for good.
    'src/activities/order-hand-over.ts',
    'src/activities/order-lookup.ts',
  ],
  // Run in the Temporal sandbox (test/support/stryker/workflow-sandbox.ts), a minute or two per
  // mutant (docs/testing.md, The bar).
  workflows: [
    'src/workflows/payment.ts',
    'src/workflows/order.ts',
    // order.ts split by what an event does (issue 28 point 8): its activities, the fulfilment,
    // the refunds and refund reviews.
    'src/workflows/order-steps.ts',
    'src/workflows/order-fulfilment.ts',
    'src/workflows/order-refunds.ts',
  ],
  // The refund, dispute and thin-event workflows (issue 25), in the sandbox like the workflows
  // scope but apart from it, so that their baseline does not wait for order.ts's several hundred
  // mutants.
  events: [
    'src/workflows/refund.ts',
    'src/workflows/dispute.ts',
    'src/workflows/thin-event.ts',
    // The intake steps the refund, dispute and payment workflows share, and the once-only alert
    // start of the dispute and order workflows (issue 28 point 8).
    'src/workflows/intake-steps.ts',
    'src/workflows/raise-alert.ts',
  ],
};
