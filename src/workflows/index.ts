// Every workflow the workers register, exported by its wire name.
export { paymentWorkflow } from './payment';
export { failureAlertWorkflow } from './alert';
