import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { z } from 'zod';
import { createTool, parseTool } from '../src/cli/command-line';
import { CONFIG_SLICES } from '../src/config';
import { TEMPORAL_PROFILE_VARIABLES } from '../src/config/temporal';

/**
 * `npm run docs:config`: writes docs/configuration.md from the configuration's slices, so the
 * reference cannot say what the schema does not. `--check` writes nothing and exits 1 when the
 * file differs (test/docs/configuration-reference.test.ts runs it, so CI fails on drift).
 */

export const REFERENCE_PATH = resolve(__dirname, '../docs/configuration.md');
const FIX = 'npm run docs:config';

/** Read by the tooling of development and the tests, never by a process of the app (markdown cells). */
const TOOLING_VARIABLES: readonly (readonly [string, string, string])[] = [
  [
    '`TEMPORAL_CLI_PATH`, `TEMPORAL_TEST_SERVER_PATH`',
    'unset',
    'use these Temporal server binaries instead of provisioning them ([docs](temporal-servers.md))',
  ],
  [
    '`PROMETHEUS_BIN_DIR`',
    'unset',
    'a folder with `prometheus` and `promtool` to use instead of Debian’s ([docs](operations.md#dashboard-and-alert-rules))',
  ],
  [
    '`TEMPORAL_SERVER_BIN`, `TEMPORAL_SQL_TOOL_BIN`',
    'unset',
    '`npm run cluster`: use these `temporal-server` and `temporal-sql-tool` binaries instead of building them ([docs](temporal-cluster.md))',
  ],
  ['`TEST_POSTGRES_URL`', 'unset', 'tests use this PostgreSQL server instead of starting one'],
  [
    '`CHROMIUM_PATH`',
    'npm’s `@sparticuz/chromium`, else `/usr/bin/chromium`',
    'the browser of the Web UI tests ([docs](testing.md))',
  ],
  ['`DEMO_WAIT_SECONDS`', '`60`', 'how long `npm run demo` watches an order that keeps retrying'],
  ['`FUZZ_RUNS`', '`20000`', '`npm run fuzz`: how many generated deliveries'],
];

function row(cells: readonly string[]): string {
  return `| ${cells.map((c) => c.replaceAll('|', '\\|')).join(' | ')} |`;
}

function table(rows: readonly (readonly string[])[]): string[] {
  return [
    row(['Variable', 'Default', 'What it does']),
    row(['---', '---', '---']),
    ...rows.map(row),
  ];
}

/** The default as the reference shows it: the field's own text, else zod's default, else unset. */
function defaultOf(field: z.ZodType): string {
  const meta = z.globalRegistry.get(field) as { defaultText?: string } | undefined;
  if (meta?.defaultText !== undefined) return meta.defaultText;
  const json = jsonOf(field);
  return json.default === undefined ? 'unset' : `\`${json.default}\``;
}

function jsonOf(field: z.ZodType) {
  return z.toJSONSchema(field, { io: 'input', unrepresentable: 'any' }) as {
    default?: string | number | boolean;
    minimum?: number;
    maximum?: number;
  };
}

/** The description, and a number's bounds as the schema enforces them. */
function describe(name: string, field: z.ZodType): string {
  const description = z.globalRegistry.get(field)?.description;
  if (description === undefined) throw new Error(`${name} has no description (src/config/)`);
  const { minimum, maximum } = jsonOf(field);
  if (minimum === undefined || maximum === undefined) return description;
  return `${description} (${minimum} to ${maximum})`;
}

export async function renderReference(): Promise<string> {
  const lines = [
    '# Configuration',
    '',
    `<!-- Generated from src/config/ by \`${FIX}\`; edit the descriptions there, not here. -->`,
    '',
    'Every setting is an environment variable, validated when a process starts (`src/config/`, one',
    'module per slice below); a bad value stops the process with every problem at once, each',
    'naming the variable and what to fix. Every default works on a laptop; with',
    '`NODE_ENV=production` each slice refuses what would only fake its work there (public dev',
    'secrets, the embedded Temporal server, the local partners). `npm run ops -- doctor` checks an',
    'installation’s settings.',
  ];
  for (const slice of CONFIG_SLICES) {
    const fields = Object.entries(slice.fields) as [string, z.ZodType][];
    const rows = fields.map(([name, field]) => [
      `\`${name}\``,
      defaultOf(field),
      describe(name, field),
    ]);
    lines.push('', `## ${slice.title}`, '', slice.summary, '', ...table(rows));
  }
  lines.push(
    '',
    '## Temporal connection profile',
    '',
    'Read as the Temporal CLI reads them (`@temporalio/envconfig`: a `temporal.toml` profile,',
    'overridden by these variables), then checked at start-up (`src/config/temporal-connection.ts`).',
    '',
    ...table(TEMPORAL_PROFILE_VARIABLES),
    '',
    '## Tooling and tests',
    '',
    'Read by `dev/` and `test/` only, never by a process of the app.',
    '',
    ...table(TOOLING_VARIABLES),
  );
  const options = await resolveConfig(REFERENCE_PATH);
  return format(`${lines.join('\n')}\n`, { ...options, filepath: REFERENCE_PATH });
}

const commandLine = createTool(
  `${FIX} --`,
  'Writes docs/configuration.md from the configuration slices of src/config/.',
).option(
  '--check',
  'write nothing; exit 1 when docs/configuration.md differs from what it would write',
);

async function main(): Promise<void> {
  const line = await parseTool(commandLine, (_args, options) => ({
    check: options.check === true,
  }));
  if (line.kind === 'exit') {
    process.exitCode = line.code;
    return;
  }
  const rendered = await renderReference();
  if (!line.work.check) {
    writeFileSync(REFERENCE_PATH, rendered);
    console.log(`wrote ${REFERENCE_PATH}`);
    return;
  }
  let current = '';
  try {
    current = readFileSync(REFERENCE_PATH, 'utf8');
  } catch {
    // A missing file is drift too.
  }
  if (current !== rendered) {
    console.error(
      `docs/configuration.md differs from what src/config/ describes: run \`${FIX}\` and commit it`,
    );
    process.exitCode = 1;
  }
}

if (require.main === module) void main();
