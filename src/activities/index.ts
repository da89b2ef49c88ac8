import { createPaymentActivities, type PaymentActivityDeps } from './payment-activities';

export type ActivityDeps = PaymentActivityDeps;

/** Every activity the workers register, built from their dependencies. */
export function createActivities(deps: ActivityDeps) {
  return { ...createPaymentActivities(deps) };
}

/** The type workflows proxy against (`import type` only). */
export type Activities = ReturnType<typeof createActivities>;
