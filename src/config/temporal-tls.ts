import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow';
import type { ClientConfigProfile } from '@temporalio/envconfig';
import type { TemporalConnectionSettings } from '../temporal/connection';

export interface Label {
  name: string;
  path?: string;
  from: string;
}

/** The setting first (it is what to fix), its file last. */
export function problemWith(label: Label, text: string): string {
  return `${label.name}: ${text}${label.path ? ` (${label.path})` : ''}`;
}

/** envconfig reads the files but checks nothing in them: a bad one would fail the handshake. */
export function checkTls(
  options: TLSConfig | true,
  profile: ClientConfigProfile,
  labels: Record<'serverCA' | 'cert' | 'key', Label | undefined>,
  problems: string[],
): NonNullable<TemporalConnectionSettings['tls']> {
  const tls = options === true ? {} : options;
  const result: NonNullable<TemporalConnectionSettings['tls']> = {
    serverName: profile.tls?.serverName,
  };
  if (tls.serverRootCACertificate && labels.serverCA) {
    if (certificates(tls.serverRootCACertificate, labels.serverCA, problems)) {
      result.serverCa = labels.serverCA.name;
    }
  }
  const pair = tls.clientCertPair;
  if (!pair || !labels.cert || !labels.key) return result;
  const certificate = certificates(pair.crt, labels.cert, problems)?.[0];
  if (certificate) {
    const notAfter = new Date(certificate.validTo);
    const notBefore = new Date(certificate.validFrom);
    if (notAfter.getTime() < Date.now()) {
      problems.push(
        problemWith(labels.cert, `the client certificate expired on ${notAfter.toISOString()}`),
      );
    } else if (notBefore.getTime() > Date.now()) {
      problems.push(
        problemWith(
          labels.cert,
          `the client certificate is not valid before ${notBefore.toISOString()}`,
        ),
      );
    }
    const subject = certificate.subject.replace(/\n/g, ', ');
    result.clientCert = { subject, notAfter, name: labels.cert.name, from: labels.cert.from };
  }
  let key: KeyObject | undefined;
  try {
    key = createPrivateKey({ key: Buffer.from(pair.key), format: 'pem' });
  } catch {
    // Not the crypto error's text: this message must stay key-free.
    problems.push(
      problemWith(labels.key, 'not a PEM private key (unencrypted PKCS#8, PKCS#1 or SEC1)'),
    );
  }
  if (key && certificate && !certificate.checkPrivateKey(key)) {
    problems.push(
      problemWith(
        labels.key,
        `this key does not belong to the client certificate ${labels.cert.from}`,
      ),
    );
  }
  return result;
}

/** Every certificate of a PEM bundle; undefined (and a problem) when there is none or one is broken. */
function certificates(
  pem: Uint8Array,
  label: Label,
  problems: string[],
): X509Certificate[] | undefined {
  const blocks = Buffer.from(pem)
    .toString('utf8')
    .match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (!blocks) {
    problems.push(problemWith(label, 'no PEM certificate in it (-----BEGIN CERTIFICATE-----)'));
    return undefined;
  }
  try {
    return blocks.map((block) => new X509Certificate(block));
  } catch {
    problems.push(problemWith(label, 'a certificate in it is malformed'));
    return undefined;
  }
}
