import { spawn } from 'node:child_process';
import { runMain } from '../../src/process/run-main';
import { devServerExecutable } from '../../harness/temporal/provision';

/**
 * `npm run temporal -- <args>`: the Temporal CLI this project provisions (the one whose dev server
 * `npm start` runs, CLI 1.5.1, in ~/.cache/order-payments-temporal/), which is on nobody's PATH.
 * It reads TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE as the app does (unset: 127.0.0.1:7233,
 * default), so `npm run temporal -- activity pause …` acts on the stack that is running.
 */
async function main(): Promise<number> {
  const executable = await devServerExecutable({
    log: (line) => process.stderr.write(`${line}\n`),
  });
  if (executable.type !== 'existing-path') {
    process.stderr.write(
      'No Temporal CLI is provisioned here and the SDK would download it: run npm run provision first.\n',
    );
    return 1;
  }
  const child = spawn(executable.path, process.argv.slice(2), { stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

runMain(main);
