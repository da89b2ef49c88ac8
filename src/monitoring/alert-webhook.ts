// As the alert activities post (src/activities/alert-activities.ts), for where no worker can
// deliver it: the alert is that the workers are gone.
export async function postAlert(
  url: string,
  body: { text: string; alert: Record<string, unknown> },
  options: { idempotencyKey: string; timeoutMs?: number },
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': options.idempotencyKey },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  await response.text().catch(() => '');
  if (!response.ok) throw new Error(`alert sink answered ${response.status}`);
}

export function taskQueueUiLink(uiUrl: string, namespace: string, taskQueue: string): string {
  const base = uiUrl.replace(/\/+$/, '');
  return `${base}/namespaces/${encodeURIComponent(namespace)}/task-queues/${encodeURIComponent(taskQueue)}`;
}
