import { adoptSqliteErrors } from './sqlite-errors';

// A failed SQLite statement throws an Error of this test file (see sqlite-errors.ts).
adoptSqliteErrors();
