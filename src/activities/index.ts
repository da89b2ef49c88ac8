import { createAlertActivities, type AlertActivityDeps } from './alert-activities';
import { createPaymentActivities, type PaymentActivityDeps } from './payment-activities';

export interface ActivityDeps extends PaymentActivityDeps {
  alerts: AlertActivityDeps;
}

/** Every activity the workers register, built from their dependencies. */
export function createActivities(deps: ActivityDeps) {
  return { ...createPaymentActivities(deps), ...createAlertActivities(deps.alerts) };
}

/** The type workflows proxy against (`import type` only). */
export type Activities = ReturnType<typeof createActivities>;
