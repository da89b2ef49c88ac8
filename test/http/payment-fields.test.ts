import { MAX_ROW_ID } from '../../src/db/schema';
import { orderReference } from '../../src/http/providers/payment-fields';

describe('orderReference', () => {
  it('reads an order ID up to the largest the ID column holds, and keeps a larger one as sent', () => {
    expect(orderReference(String(MAX_ROW_ID))).toBe(MAX_ROW_ID);
    expect(orderReference(MAX_ROW_ID)).toBe(MAX_ROW_ID);
    expect(orderReference(String(MAX_ROW_ID + 1))).toBe(String(MAX_ROW_ID + 1));
    expect(orderReference('12')).toBe(12);
    expect(orderReference('ORD-12')).toBe('ORD-12');
    expect(orderReference('012')).toBe('012');
  });
});
