export {
  createDatabase,
  isDatabaseUnavailable,
  parseDatabaseUrl,
  type DatabaseDialect,
  type DatabaseHandle,
  type DatabaseLocation,
  type DatabaseOptions,
} from './connection';
export { knownMigrations, migrateToLatest } from './migrate';
export {
  createOrdersRepository,
  type CreateOrderInput,
  type CreateOrderResult,
  type Order,
  type OrdersRepository,
} from './repositories/orders';
export {
  createPaymentsRepository,
  type Payment,
  type PaymentsRepository,
  type RecordPaymentInput,
  type RecordPaymentResult,
} from './repositories/payments';
export {
  createLoyaltyRepository,
  type AwardForOrderInput,
  type AwardForOrderResult,
  type LoyaltyLedgerEntry,
  type LoyaltyRepository,
} from './repositories/loyalty';
export * from './repositories/refunds';
export * from './repositories/disputes';
export * from './repositories/settlements';
export * from './repositories/stock';
export * from './repositories/alert-deliveries';
export * from './repositories/order-export';
export * from './repositories/unmatched';
export * from './repositories/partner-pauses';
export {
  MAX_INTEGER_COLUMN,
  MAX_ROW_ID,
  type Database,
  type OrderStatus,
  type DisputeStatus,
  type ShipmentStatus,
} from './schema';
