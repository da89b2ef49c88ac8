import { runChaos } from './driver';
import { readChaosOptions } from './options';
import { passed, renderReport } from './table';

/**
 * `npm run chaos`: the chaos run at full size (or `-- --size small`, or any knob; see
 * docs/chaos.md and `npm run chaos -- --help`). Prints the summary table; exits 1 when an
 * invariant failed, 2 when the run itself could not be carried out, 130 when interrupted.
 */
async function main(): Promise<number> {
  const line = await readChaosOptions(process.argv.slice(2), process.env);
  if (line.kind === 'exit') return line.code;
  const options = line.work;
  const controller = new AbortController();
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) {
      // A second Ctrl-C: the 'exit' handler of the driver still kills what it started.
      process.stderr.write(`[chaos] ${signal} again: exiting now\n`);
      process.exit(130);
    }
    interrupted = true;
    process.stderr.write(`[chaos] ${signal}: stopping every process the run started…\n`);
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const report = await runChaos({ options, signal: controller.signal });
  process.stdout.write(`\n${renderReport(report)}\n`);
  if (interrupted) return 130;
  if (report.error) return 2;
  return passed(report) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
