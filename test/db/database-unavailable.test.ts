import { isDatabaseUnavailable } from '../../src/db/connection';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable', () => {
  it.each([
    ['connection refused', withCode('ECONNREFUSED')],
    ['connection reset', withCode('ECONNRESET')],
    ['TCP timeout', withCode('ETIMEDOUT')],
    ['every address refused', new AggregateError([withCode('ECONNREFUSED')], 'connect failed')],
    ['pool connect timeout', new Error('timeout exceeded when trying to connect')],
    [
      'client connect timeout',
      new Error('Connection terminated due to connection timeout', { cause: new Error('x') }),
    ],
    ['connection lost', new Error('Connection terminated unexpectedly')],
    ['client query timeout', new Error('Query read timeout')],
    ['SQLSTATE 08006 connection_failure', withCode('08006')],
    ['SQLSTATE 08001 cannot establish', withCode('08001')],
    ['SQLSTATE 57P01 admin_shutdown', withCode('57P01')],
    ['SQLSTATE 57P02 crash_shutdown', withCode('57P02')],
    ['SQLSTATE 57P03 cannot_connect_now', withCode('57P03')],
    ['statement_timeout', withCode('57014', 'canceling statement due to statement timeout')],
    ['SQLite write lock', withCode('SQLITE_BUSY', 'database is locked')],
    ['SQLite extended busy code', withCode('SQLITE_BUSY_SNAPSHOT')],
    ['wrapped cause', new Error('outer', { cause: withCode('ECONNREFUSED') })],
  ])('%s: unavailable', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['unique violation', withCode('23505')],
    ['syntax error', withCode('42601')],
    ['SQLite constraint', withCode('SQLITE_CONSTRAINT_UNIQUE')],
    ['not an error', 'ECONNREFUSED'],
    ['null', null],
  ])('%s: a bug or a client error, not an outage', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});
