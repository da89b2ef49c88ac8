import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { createActivities } from '../../src/activities';
import { createHeavyActivities } from '../../src/activities/heavy';
import type * as CrashPointsModule from '../../src/activities/crash-points';
import {
  CRASH_POINT_HOOK,
  CRASH_POINTS,
  type CrashPointHook,
  type CrashPointName,
} from '../../src/activities/crash-points';

/**
 * The list of crash points is only worth something if it is complete: this reads every module of
 * src/activities and fails when an effect (a database write through a repository, a partner
 * call, a file written or removed, a mail sent, a Temporal call) runs outside a declared point,
 * when a point is declared but not placed, placed twice or in another activity than declared,
 * or when an activity has no reply point. The enumerated run (npm run crash-points) reads the
 * same list, and the committed table must list every point.
 */

const ACTIVITIES_DIR = path.resolve(__dirname, '../../src/activities');
const TABLE = path.resolve(__dirname, '../../reports/crash-points.md');

// Calls that change something outside the process. Reads (find, list, readFile) are not effects:
// a crash around a read loses nothing.
const EFFECT_FUNCTIONS = new Set([
  'fetch',
  'rm',
  'rename',
  'unlink',
  'open',
  'mkdir',
  'writeFile',
  'appendFile',
  'writeFileAtomically',
  'writeAtomically',
  'postAlert',
  'signalOrderWorkflow',
]);
const EFFECT_METHODS = new Set([
  'sendMail',
  'execute',
  'executeTakeFirst',
  'executeTakeFirstOrThrow',
  'transaction',
  'write',
  'writeFile',
  'signalWithStart',
  'signal',
  'start',
  'requestShipment',
  'cancelShipment',
]);
// Methods of the activities' dependencies (`deps.<x>.<method>`) that only read.
const DEPENDENCY_READS = new Set([
  'count',
  'describe',
  'findById',
  'get',
  'getHandle',
  'forOrder',
  'handledBy',
  'ledgerFor',
  'list',
  'listByOrder',
  'paidAwaitingShipment',
  'readPage',
  'state',
  'summarizeRange',
  'wasDelivered',
]);
// Functions that implement one effect; every call of them must be at a crash point instead.
const EFFECT_IMPLEMENTATIONS = new Set([
  'postAlert',
  'requestShipment',
  'sendToWarehouse',
  'signalOrderWorkflow',
  'writeAtomically',
  'writeFileAtomically',
]);

interface Placement {
  point: string;
  file: string;
  line: number;
  activity: string | undefined;
}

interface Scan {
  placements: Placement[];
  /** Effects outside any crash point: `file:line call`. */
  unguarded: string[];
  /** atCrashPoint calls whose name is not a string literal. */
  dynamic: string[];
}

function scanActivities(): Scan {
  const scan: Scan = { placements: [], unguarded: [], dynamic: [] };
  const files = readdirSync(ACTIVITIES_DIR).filter(
    (f) => f.endsWith('.ts') && f !== 'crash-points.ts',
  );
  for (const file of files) {
    const text = readFileSync(path.join(ACTIVITIES_DIR, file), 'utf8');
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const where = (node: ts.Node) =>
      `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    const visit = (node: ts.Node) => {
      if (ts.isCallExpression(node)) {
        const name = calleeName(node.expression);
        if (name === 'atCrashPoint') {
          const [first] = node.arguments;
          if (first && ts.isStringLiteral(first)) {
            scan.placements.push({
              point: first.text,
              file,
              line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1,
              activity: enclosingActivity(node),
            });
          } else {
            scan.dynamic.push(where(node));
          }
        } else if (isEffect(node) && !atCrashPoint(node) && !inImplementation(node)) {
          scan.unguarded.push(`${where(node)} ${node.expression.getText(source)}(…)`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return scan;
}

function calleeName(expression: ts.Expression): string | undefined {
  if (ts.isIdentifier(expression)) return expression.text;
  if (ts.isPropertyAccessExpression(expression)) return expression.name.text;
  return undefined;
}

function isEffect(call: ts.CallExpression): boolean {
  const callee = call.expression;
  if (ts.isIdentifier(callee)) return EFFECT_FUNCTIONS.has(callee.text);
  if (!ts.isPropertyAccessExpression(callee)) return false;
  const method = callee.name.text;
  if (EFFECT_METHODS.has(method)) return true;
  // Anything a dependency does, unless it is known to only read: a new repository method is an
  // effect until it is listed here as a read.
  return rootName(callee) === 'deps' && !DEPENDENCY_READS.has(method);
}

function rootName(expression: ts.Expression): string | undefined {
  let current = expression;
  while (ts.isPropertyAccessExpression(current) || ts.isCallExpression(current)) {
    current = current.expression;
  }
  return ts.isIdentifier(current) ? current.text : undefined;
}

/** Inside the function that `atCrashPoint(name, fn)` runs. */
function atCrashPoint(node: ts.Node): boolean {
  for (let current = node.parent; current; current = current.parent) {
    if (
      ts.isCallExpression(current) &&
      calleeName(current.expression) === 'atCrashPoint' &&
      current.arguments[1] !== undefined &&
      isWithin(node, current.arguments[1])
    ) {
      return true;
    }
  }
  return false;
}

function isWithin(node: ts.Node, container: ts.Node): boolean {
  return node.getStart() >= container.getStart() && node.getEnd() <= container.getEnd();
}

/** Inside a function that implements one effect (and is called at a crash point itself). */
function inImplementation(node: ts.Node): boolean {
  for (let current = node.parent; current; current = current.parent) {
    const name = functionName(current);
    if (name !== undefined && EFFECT_IMPLEMENTATIONS.has(name)) return true;
  }
  return false;
}

function functionName(node: ts.Node): string | undefined {
  if (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) {
    return node.name && ts.isIdentifier(node.name) ? node.name.text : undefined;
  }
  return undefined;
}

/** The activity a point is placed in: the nearest enclosing method of the activities object. */
function enclosingActivity(node: ts.Node): string | undefined {
  for (let current = node.parent; current; current = current.parent) {
    if (ts.isMethodDeclaration(current) && ts.isIdentifier(current.name)) {
      return current.name.text;
    }
  }
  return undefined;
}

/** Every activity the two workers register, by name. */
function registeredActivities(): string[] {
  const payments = createActivities({
    mail: { smtpUrl: 'smtp://127.0.0.1:2525', from: 'shop@example.com' },
    alerts: { alertWebhookUrl: undefined, temporalUiUrl: undefined },
  } as never);
  const heavy = createHeavyActivities({
    alerts: { alertWebhookUrl: undefined, temporalUiUrl: undefined },
  } as never);
  return [...new Set([...Object.keys(payments), ...Object.keys(heavy)])].sort();
}

const declared = Object.entries(CRASH_POINTS) as Array<
  [CrashPointName, (typeof CRASH_POINTS)[CrashPointName]]
>;

describe('the declared crash points', () => {
  const scan = scanActivities();

  it('guard every effect of every activity module', () => {
    expect(scan.unguarded).toEqual([]);
    expect(scan.dynamic).toEqual([]);
  });

  it('are each placed exactly once, in the activity they are declared for', () => {
    const effects = declared.filter(([, d]) => d.kind !== 'reply').map(([name]) => name);
    expect(scan.placements.map((p) => p.point).sort()).toEqual([...effects].sort());
    for (const placement of scan.placements) {
      const declaration = CRASH_POINTS[placement.point as CrashPointName];
      expect({ ...placement, activity: declaration.activity }).toEqual(placement);
    }
  });

  it('give every registered activity a reply point, and no other', () => {
    const replies = declared
      .filter(([, d]) => d.kind === 'reply')
      .map(([name, d]) => {
        expect(name).toBe(`${d.activity}.reply`);
        return d.activity;
      });
    expect(replies.sort()).toEqual(registeredActivities());
  });

  it('are all in the committed table (npm run crash-points)', () => {
    // Rows by their first two cells (point, side), whatever the padding.
    const rows = new Set(
      readFileSync(TABLE, 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('|'))
        .map((line) => {
          const [point, side] = line
            .split('|')
            .slice(1, 3)
            .map((cell) => cell.trim());
          return `${point} ${side}`;
        }),
    );
    const missing = declared
      .flatMap(([name, d]) =>
        d.kind === 'reply' ? [`${name} before`] : [`${name} before`, `${name} after`],
      )
      .filter((row) => !rows.has(row));
    expect(missing).toEqual([]);
  });
});

describe('atCrashPoint', () => {
  afterEach(() => {
    delete (globalThis as { [CRASH_POINT_HOOK]?: CrashPointHook })[CRASH_POINT_HOOK];
  });

  function loadWithHook(hook: CrashPointHook | undefined) {
    (globalThis as { [CRASH_POINT_HOOK]?: CrashPointHook })[CRASH_POINT_HOOK] = hook;
    let loaded!: typeof CrashPointsModule;
    jest.isolateModules(() => {
      loaded = jest.requireActual<typeof CrashPointsModule>('../../src/activities/crash-points');
    });
    return loaded;
  }

  it('without the hook runs the effect and registers no interceptor', async () => {
    const module = loadWithHook(undefined);
    await expect(module.atCrashPoint('recordPayment.commit', async () => 7)).resolves.toBe(7);
    expect(module.crashPointInterceptors).toEqual([]);
  });

  it('with the hook calls it right before and right after the effect', async () => {
    const calls: string[] = [];
    const module = loadWithHook((point, phase) => calls.push(`${point}@${phase}`));
    const result = await module.atCrashPoint('awardLoyaltyPoints.commit', async () => {
      calls.push('effect');
      return 'done';
    });
    expect(result).toBe('done');
    expect(calls).toEqual([
      'awardLoyaltyPoints.commit@before',
      'effect',
      'awardLoyaltyPoints.commit@after',
    ]);
    expect(module.crashPointInterceptors).toHaveLength(1);
  });

  it('does not reach the after side when the effect fails', async () => {
    const calls: string[] = [];
    const module = loadWithHook((point, phase) => calls.push(`${point}@${phase}`));
    await expect(
      module.atCrashPoint('deliverAlert.post', () => Promise.reject(new Error('refused'))),
    ).rejects.toThrow('refused');
    expect(calls).toEqual(['deliverAlert.post@before']);
  });

  it("gives the reply point after the activity's result, before it is returned", async () => {
    const calls: string[] = [];
    const module = loadWithHook((point, phase) => calls.push(`${point}@${phase}`));
    const [factory] = module.crashPointInterceptors;
    const { inbound } = factory!({ info: { activityType: 'notifyWarehouse' } } as never);
    const result = await inbound!.execute!({ args: [], headers: {} }, async () => {
      calls.push('activity');
      return 'receipt';
    });
    expect(result).toBe('receipt');
    expect(calls).toEqual(['activity', 'notifyWarehouse.reply@before']);
  });
});
