import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import type { LoyaltyRepository, OrdersRepository } from '../db';
import { FailureType } from '../shared/errors';
import { ORDER_CONFIRMED_REASON, POINTS_PER_CONFIRMED_ORDER } from '../shared/loyalty';
import { atCrashPoint } from './crash-points';

export interface LoyaltyActivityDeps {
  loyalty: LoyaltyRepository;
  orders: OrdersRepository;
}

/** Outcome of awarding the points of one order. */
export interface AwardLoyaltyPointsResult {
  /** True only for the call that awarded them; a retry or a second call gets false. */
  awarded: boolean;
  /** The points this order is worth (whether awarded by this call or an earlier one). */
  points: number;
  /** The user's balance afterwards. */
  balance: number;
}

/** Activities of the loyalty programme. */
export function createLoyaltyActivities(deps: LoyaltyActivityDeps) {
  return {
    /**
     * Awards the points for a confirmed order, once per order however often it runs: the
     * ledger's UNIQUE (order_id, reason) decides, and the balance moves only with a new row.
     */
    async awardLoyaltyPoints(input: { orderId: number }): Promise<AwardLoyaltyPointsResult> {
      const order = await deps.orders.findById(input.orderId);
      if (!order) {
        throw ApplicationFailure.create({
          type: FailureType.OrderNotFound,
          message: `order ${input.orderId} does not exist`,
          details: [{ orderId: input.orderId }],
          nonRetryable: true,
        });
      }
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
