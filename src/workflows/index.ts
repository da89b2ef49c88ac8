import type { AlertDigestWorkflow } from '../shared/alert';
import type { OrderWorkflow } from '../shared/order';
import type { SlaIncidentWorkflow } from '../shared/sla';
import { alertDigestWorkflow } from './alert-digest';
import { orderWorkflow } from './order';
import { slaIncidentWorkflow } from './sla';

// Every workflow the workers register, exported by its wire name.
export { paymentWorkflow } from './payment';
export { refundWorkflow } from './refund';
export { disputeWorkflow } from './dispute';
export { orderWorkflow } from './order';
export { alertWorkflow } from './alert';
export { alertDigestWorkflow } from './alert-digest';
export { aggregateStockWorkflow } from './stock';
export { slaCheckWorkflow, slaIncidentWorkflow } from './sla';
export { invoiceWorkflow } from './invoice';
export { exportOrdersWorkflow } from './batch';
export { thinEventWorkflow } from './thin-event';

// Activities start orderWorkflow by its signature in src/shared/order.ts, without importing this
// module (which imports their types): the compiler holds the two together here.
const _orderWorkflowFits: OrderWorkflow = orderWorkflow;
const _alertDigestWorkflowFits: AlertDigestWorkflow = alertDigestWorkflow;
const _slaIncidentWorkflowFits: SlaIncidentWorkflow = slaIncidentWorkflow;
