// @ts-check
import { declareValuePlugin, PluginKind } from '@stryker-mutator/api/plugin';

// Mutants that change only what a person reads, never what happens: the arguments of log calls
// (`log.warn(...)`, `logger.info(...)`, `request.log.error(...)`) and the Web UI summaries of
// activities (`summary: '...'`). Stryker reports them as Ignored with this reason, so they are
// counted and visible, not hidden. A log line that must hold something (an order ID, no secret)
// has its own test, and failure messages and types are not ignored.
const LOGGERS = new Set(['log', 'logger']);

/** @param {any} path a Babel NodePath */
function isLogCall(path) {
  if (!path.isCallExpression()) return false;
  const callee = path.node.callee;
  if (callee.type !== 'MemberExpression') return false;
  const target = callee.object;
  if (target.type === 'Identifier') return LOGGERS.has(target.name);
  return (
    target.type === 'MemberExpression' &&
    target.property.type === 'Identifier' &&
    LOGGERS.has(target.property.name)
  );
}

/** @param {any} path a Babel NodePath */
function isSummary(path) {
  return (
    path.isObjectProperty() &&
    path.node.key.type === 'Identifier' &&
    path.node.key.name === 'summary'
  );
}

export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, 'log-text', {
    /** @param {any} path */
    shouldIgnore(path) {
      if (isLogCall(path)) return 'Log text: read by people, asserted where it matters';
      if (isSummary(path)) return 'Web UI summary of an activity: metadata';
      return undefined;
    },
  }),
];
