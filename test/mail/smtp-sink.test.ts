import { connect } from 'node:net';
import { createTransport, type NodemailerError } from 'nodemailer';
import { startSmtpSink, type SmtpSink } from '../../harness/partners/smtp-sink';
import { rejectionOf as rejectionAs } from '../support/failures';

// The sink against nodemailer over a real SMTP session on loopback: what it records, and the
// replies its failure modes produce on the client's side.
let sink: SmtpSink;
beforeAll(async () => {
  sink = await startSmtpSink();
});
afterAll(() => sink?.close());
beforeEach(() => sink.reset());

const send = (subject = 'Hello', text = 'Plain body') =>
  createTransport({ url: sink.url, socketTimeout: 2_000 }).sendMail({
    from: 'Shop <shop@example.com>',
    to: 'buyer@example.com',
    subject,
    text,
    messageId: '<test-1@example.com>',
  });

const rejectionOf = (promise: Promise<unknown>) =>
  rejectionAs(promise, Error) as Promise<NodemailerError>;

describe('SMTP sink', () => {
  it('listens on a loopback smtp:// URL with a port of its own', () => {
    expect(sink.url).toBe(`smtp://127.0.0.1:${sink.port}`);
    expect(sink.port).toBeGreaterThan(0);
  });

  it('records the envelope, Subject, Message-ID and text of a message nodemailer sends', async () => {
    const info = await send('Order #7 confirmed', 'Line one\nLine two');

    expect(info.accepted).toEqual(['buyer@example.com']);
    expect(sink.messages).toHaveLength(1);
    const [mail] = sink.messages;
    expect(mail).toMatchObject({
      envelopeFrom: 'shop@example.com',
      envelopeTo: ['buyer@example.com'],
      subject: 'Order #7 confirmed',
      messageId: '<test-1@example.com>',
      text: 'Line one\nLine two',
    });
    expect(mail!.headers['from']).toBe('Shop <shop@example.com>');
    expect(mail!.raw).toContain('Message-ID: <test-1@example.com>');
  });

  it('decodes encoded-word subjects and quoted-printable bodies', async () => {
    await send('ご注文ありがとうございます', `合計 5400 円 = ${'x'.repeat(90)}`);

    expect(sink.messages[0]!.subject).toBe('ご注文ありがとうございます');
    expect(sink.messages[0]!.text).toBe(`合計 5400 円 = ${'x'.repeat(90)}`);
  });

  it('refuses the next N messages with the given 4xx reply, then accepts again', async () => {
    sink.failNext(2, { code: 451, message: 'try later' });

    const first = await rejectionOf(send());
    const second = await rejectionOf(send());
    await send();

    for (const error of [first, second]) {
      expect(error.responseCode).toBe(451);
      expect(error.permanent).toBe(false);
    }
    expect(sink.rejectedCount).toBe(2);
    expect(sink.messages).toHaveLength(1);
  });

  it('refuses every message with a 5xx reply in reject mode until set back to accept', async () => {
    sink.setMode({ kind: 'reject', code: 550, message: 'mailbox unavailable' });

    const error = await rejectionOf(send());
    sink.setMode({ kind: 'accept' });
    await send();

    expect(error.responseCode).toBe(550);
    expect(error.permanent).toBe(true);
    expect(error.response).toContain('mailbox unavailable');
    expect(sink.messages).toHaveLength(1);
  });

  it('keeps a delayed message on receipt and answers only after the delay', async () => {
    sink.setMode({ kind: 'accept', delayMs: 400 });
    const started = Date.now();

    const sending = send();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sink.messages).toHaveLength(1);
    await sending;

    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
  });

  it('only takes 4xx and 5xx codes as failure replies', () => {
    expect(() => sink.failNext(1, { code: 250 })).toThrow(/4xx or 5xx/);
    expect(() => sink.setMode({ kind: 'reject', code: 999 })).toThrow(/4xx or 5xx/);
  });

  it('closes with a delayed reply pending, answering it, and can be closed twice', async () => {
    const other = await startSmtpSink();
    other.setMode({ kind: 'accept', delayMs: 30_000 });
    const sending = createTransport({ url: other.url }).sendMail({
      from: 'shop@example.com',
      to: 'buyer@example.com',
      text: 'x',
    });
    while (other.messages.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));

    await Promise.all([other.close(), other.close()]);

    await expect(sending).resolves.toMatchObject({ accepted: ['buyer@example.com'] });
    await expect(isListening(other.port)).resolves.toBe(false);
  });
});

function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
