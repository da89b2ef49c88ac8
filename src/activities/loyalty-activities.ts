import { Context } from '@temporalio/activity';
import type { LoyaltyRepository, OrdersRepository } from '../db';
import { ORDER_CONFIRMED_REASON, POINTS_PER_CONFIRMED_ORDER } from '../shared/loyalty';
import { atCrashPoint } from './crash-points';
import { findOrderOrFail } from './order-lookup';

export interface LoyaltyActivityDeps {
  loyalty: LoyaltyRepository;
  orders: OrdersRepository;
}

export interface AwardLoyaltyPointsResult {
  /** True only for the call that awarded them; a retry or a second call gets false. */
  awarded: boolean;
  points: number;
  balance: number;
}

export function createLoyaltyActivities(deps: LoyaltyActivityDeps) {
  return {
    /** Once per order: the ledger's UNIQUE (order_id, reason) decides; the balance follows a row. */
    async awardLoyaltyPoints(input: { orderId: number }): Promise<AwardLoyaltyPointsResult> {
      const order = await findOrderOrFail(deps.orders, input.orderId);
      const points = POINTS_PER_CONFIRMED_ORDER;
      const result = await atCrashPoint('awardLoyaltyPoints.commit', () =>
        deps.loyalty.awardForOrder({
          userId: order.userId,
          orderId: order.id,
          points,
          reason: ORDER_CONFIRMED_REASON,
        }),
      );
      Context.current().log.info(
        result.awarded ? 'loyalty points awarded' : 'loyalty points already awarded',
        { orderId: order.id, userId: order.userId, points, balance: result.balance },
      );
      return { awarded: result.awarded, points, balance: result.balance };
    },
  };
}

export type LoyaltyActivities = ReturnType<typeof createLoyaltyActivities>;
