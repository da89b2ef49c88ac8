// The production workflows plus the stock aggregation workflow, bundled together until the
// latter is exported from src/workflows/index.ts.
export * from '../../src/workflows';
export { aggregateStockWorkflow } from '../../src/workflows/stock';
