// Every workflow the workers register, exported by its wire name.
export { paymentWorkflow } from './payment';
export { orderWorkflow } from './order';
export { alertWorkflow } from './alert';
export { aggregateStockWorkflow } from './stock';
export { invoiceWorkflow } from './invoice';
export { exportOrdersWorkflow } from './batch';
