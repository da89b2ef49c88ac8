import {
  dialHost,
  isLoopbackHost,
  localHttpUrl,
  parseListenAddress,
} from '../../src/net/addresses';

describe('listen addresses', () => {
  it.each([
    ['127.0.0.1:9464', { host: '127.0.0.1', port: 9464 }],
    ['[::1]:9464', { host: '::1', port: 9464 }],
    ['0.0.0.0:0', { host: '0.0.0.0', port: 0 }],
  ])('splits %s', (address, expected) => {
    expect(parseListenAddress(address)).toEqual(expected);
  });

  it.each(['9464', 'host:99999', '::1:9464', ':9464'])('refuses %s', (address) => {
    expect(() => parseListenAddress(address)).toThrow(`not a host:port address: ${address}`);
  });

  it.each([
    ['0.0.0.0', 'http://127.0.0.1:3000'],
    ['::', 'http://[::1]:3000'],
    ['::1', 'http://[::1]:3000'],
    ['127.0.0.1', 'http://127.0.0.1:3000'],
    ['orders.internal', 'http://orders.internal:3000'],
  ])('gives a URL a browser can open for a server listening on %s', (host, url) => {
    expect(localHttpUrl(host, 3000)).toBe(url);
    expect(url).toContain(dialHost(host));
  });

  it.each([
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['localhost', true],
    ['::1', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.5', false],
    ['127.0.0.1.example.com', false],
    ['localhost.example.com', false],
  ])('counts %s as loopback: %s', (host, loopback) => {
    expect(isLoopbackHost(host)).toBe(loopback);
  });
});
