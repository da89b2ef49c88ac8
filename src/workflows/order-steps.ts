import { RetryPolicies } from '../shared/retry-policies';
import { activitySteps } from './activity-steps';
import { localSteps } from './local-step';

// The activities of the order workflow (./order.ts and the modules it runs its events with).
//
// The database steps take milliseconds, so they run as local activities (./local-step.ts): in
// the worker, inside the workflow task that follows the previous step, each recorded as a marker
// that names its activity type. Each saves an activity task and a workflow task. Same presets.
export const steps = localSteps(RetryPolicies.databaseStep, {
  setShipmentStatus: 'Record the shipment status on the order',
  requestRefundReview: 'Flag the order for a refund review (double charge or wrong amount)',
  awardLoyaltyPoints: 'Award the loyalty points for the order',
  orderEventHandledBy: 'Read whether an order run already finished with the event',
  markOrderEventHandled: 'Record that this order run finished with the event',
  applyRefunds: "Add up the order's refunds and record the total",
  requestReturnReview: 'Flag the refunded order for a return review (the warehouse had it)',
  reverseLoyaltyPoints: 'Take back the points of the fully refunded order',
  applyDisputes: "Work out where the order's disputes stand and record it",
});

export const { cancelShipment, sendOrderConfirmation, notifyWarehouse } = activitySteps({
  // The cancel races the warehouse's packing: a few quick attempts, then a person (the preset
  // says why it gives up sooner than the shipment request).
  cancelShipment: [
    RetryPolicies.warehouseCancellation,
    "Cancel the order's shipment at the warehouse (refunded in full before it shipped)",
  ],
  sendOrderConfirmation: [RetryPolicies.confirmationMail, 'Send the order confirmation mail'],
  // Tries(5), Backoff([10, 30, 120]), retryUntil(+30 min): one activity, its attempts scheduled
  // by the server, so the Web UI shows it pending with its attempt, last failure and next retry.
  notifyWarehouse: [RetryPolicies.warehouseNotification, 'Ask the warehouse to ship the order'],
});
