/**
 * The least a production environment must set for loadConfig to accept it (src/config/), so a
 * test can add only the variables it is about.
 */
export const PRODUCTION_ENV = {
  NODE_ENV: 'production',
  TEMPORAL_ADDRESS: 'temporal.internal:7233',
  PAYMENT_WEBHOOK_SECRET: 'a-real-provider-secret-0123456789',
  SMTP_URL: 'smtp://mail.internal:587',
  WAREHOUSE_API_URL: 'https://warehouse.example.com',
};
