import { csvField, csvRecord } from '../../src/activities/batch-activities';

// The CSV the export writes: RFC 4180 quoting, and no formula a spreadsheet would run.
describe('csvField', () => {
  it.each([
    [null, ''],
    [42, '42'],
    ['plain@example.com', 'plain@example.com'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\r\nlines', '"two\r\nlines"'],
    ['=1+2', "'=1+2"],
    ['+1', "'+1"],
    ['-1', "'-1"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['=HYPERLINK("x")', '"\'=HYPERLINK(""x"")"'],
  ])('%j -> %j', (value, expected) => {
    expect(csvField(value)).toBe(expected);
  });
});

describe('csvRecord', () => {
  it('writes the columns in header order and ends the record with CRLF', () => {
    expect(
      csvRecord({
        id: 7,
        userId: 3,
        customerEmail: 'a@example.com',
        status: 'paid',
        totalAmount: 5400,
        shipmentStatus: null,
        confirmationSentAt: null,
        refundReviewRequestedAt: null,
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-02T00:00:00.000Z',
      }),
    ).toBe('7,3,a@example.com,paid,5400,,,,2026-01-01T00:00:00.000Z,2026-01-02T00:00:00.000Z\r\n');
  });
});
