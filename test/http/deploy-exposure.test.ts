import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { parseListenAddress, isLoopbackHost } from '../../src/net/addresses';
import { ordersApiAccess } from '../../src/http/orders-auth';
import { PAYMENT_WEBHOOK_PATH } from '../../src/http/routes/payment-webhook';

// The deployment examples expose what docs/security.md says and nothing more: a copy-paste of
// them must not put the orders API, /metrics or /readyz on the internet.
const deploy = (file: string) =>
  readFileSync(path.resolve(__dirname, '../../deploy', file), 'utf8');

describe('deploy/kubernetes', () => {
  it('routes only the webhook path from the Ingress', () => {
    const ingress = deploy('kubernetes/ingress.yaml');
    const paths = [...ingress.matchAll(/^\s*- path: (\S+)/gm)].map((m) => m[1]);
    expect(paths).toEqual(['/api/v1/webhooks/']);
    expect(PAYMENT_WEBHOOK_PATH.startsWith(paths[0]!)).toBe(true);
    expect(ingress).toMatch(/pathType: Prefix/);
    expect(ingress).not.toMatch(/defaultBackend/);
  });

  it('serves /metrics and /readyz on the admin port, which no Service exposes', () => {
    const http = deploy('kubernetes/http.yaml');
    const adminPort = Number(/- name: admin\s+containerPort: (\d+)/.exec(http)?.[1]);
    const adminAddress = /- name: ADMIN_ADDRESS\s+value: (\S+)/.exec(http)?.[1] ?? '';
    expect(parseListenAddress(adminAddress).port).toBe(adminPort);
    expect(/readinessProbe:\s+httpGet:\s+path: \/readyz\s+port: (\S+)/.exec(http)?.[1]).toBe(
      'admin',
    );
    expect(/prometheus\.io\/port: '(\d+)'/.exec(http)?.[1]).toBe(String(adminPort));
    const service = http.slice(http.indexOf('kind: Service'));
    expect([...service.matchAll(/targetPort: (\S+)/g)].map((m) => m[1])).toEqual(['http']);
  });

  it('gives the HTTP Deployment keys the API accepts', () => {
    const keys = /ORDERS_API_KEYS: (\S+)/.exec(deploy('kubernetes/config.yaml'))?.[1] ?? '';
    expect(() => loadConfig({ ORDERS_API_KEYS: keys })).not.toThrow();
  });
});

describe('deploy/systemd', () => {
  it('starts the production HTTP process with API keys and a loopback admin listener', () => {
    const env = Object.fromEntries(
      deploy('systemd/order-payments.env.example')
        .split('\n')
        .filter((line) => /^[A-Z_]+=/.test(line))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    const config = loadConfig(env);
    expect(config.NODE_ENV).toBe('production');
    expect(ordersApiAccess(config).kind).toBe('keys');
    expect(config.ADMIN_ADDRESS).not.toBe('off');
    expect(isLoopbackHost(parseListenAddress(config.ADMIN_ADDRESS).host)).toBe(true);
  });
});
