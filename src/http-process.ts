import { createTool, parseTool } from './cli/command-line';
import { runMain } from './process/run-main';

const commandLine = createTool(
  'npm run http --',
  'The HTTP process: the webhook endpoints and the orders API, with /healthz, and /readyz and ' +
    '/metrics on ADMIN_ADDRESS.',
).addHelpText(
  'after',
  '\nConfigured by the environment: docs/configuration.md; deploy units in deploy/.',
);

// Configured by the environment alone: a command line is --help or a mistake, not a start.
runMain(async () => {
  const line = await parseTool(commandLine, () => undefined);
  if (line.kind === 'exit') return line.code;
  // The server's module starts it as it loads (runMain there reports its failures).
  await import('./http/server.js');
});
