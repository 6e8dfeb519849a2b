/**
 * Cursor pagination under concurrent writes: walking every page while another
 * client keeps creating sees each object exactly once, newest first.
 */
import test from 'ava';
import { useService } from '../helpers/use-service.js';

const e2e = useService(test, { workers: 2 });

async function createMany(key: string, count: number, concurrency = 16): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next++;
        const res = await e2e.service.request('POST', '/v1/payment_intents', { key, body: { amount: 100 + next } });
        if (res.status !== 200) throw new Error(`create failed: ${res.status} ${res.text}`);
        ids.push(res.body.id);
      }
    }),
  );
  return ids;
}

test('walking every page of 250 objects while another client creates sees each exactly once, newest first', async (t) => {
  const key = await e2e.service.issueKey('walk');
  const existing = await createMany(key, 250);
  t.is(new Set(existing).size, 250);

  let creating = true;
  const createdDuring: string[] = [];
  const writer = (async () => {
    while (creating) createdDuring.push(...(await createMany(key, 4, 4)));
  })();

  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  for (;;) {
    const query: string = cursor ? `?limit=7&starting_after=${cursor}` : '?limit=7';
    const page = await e2e.service.request('GET', `/v1/payment_intents${query}`, { key });
    t.is(page.status, 200, page.text);
    const ids = page.body.data.map((p: { id: string }) => p.id) as string[];
    seen.push(...ids);
    pages++;
    if (!page.body.has_more) break;
    cursor = ids[ids.length - 1] as string;
  }
  creating = false;
  await writer;

  t.true(createdDuring.length > 0, 'the writer created objects during the walk');
  t.is(new Set(seen).size, seen.length, 'no object is repeated');
  const sorted = [...seen].sort().reverse();
  t.deepEqual(seen, sorted, 'strictly newest first');
  const seenSet = new Set(seen);
  t.deepEqual(existing.filter((id) => !seenSet.has(id)), [], 'no pre-existing object is skipped');
  t.true(pages >= 250 / 7);
});

test('walking back with ending_before from the oldest object reaches the newest without gaps', async (t) => {
  const key = await e2e.service.issueKey('walk-back');
  const ids = await createMany(key, 60, 8);
  const all = await e2e.service.request('GET', '/v1/payment_intents?limit=100', { key });
  const newestFirst = all.body.data.map((p: { id: string }) => p.id) as string[];
  t.deepEqual([...newestFirst].sort(), [...ids].sort());
  const oldest = newestFirst[newestFirst.length - 1] as string;

  const collected: string[] = [];
  let before = oldest;
  for (;;) {
    const page = await e2e.service.request('GET', `/v1/payment_intents?limit=9&ending_before=${before}`, { key });
    const pageIds = page.body.data.map((p: { id: string }) => p.id) as string[];
    t.deepEqual(pageIds, [...pageIds].sort().reverse(), 'each page is newest first');
    collected.unshift(...pageIds);
    if (!page.body.has_more) break;
    before = pageIds[0] as string;
  }
  t.deepEqual(collected, newestFirst.slice(0, -1));
});
