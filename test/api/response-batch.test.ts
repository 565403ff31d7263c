import { describe, expect, it } from 'vitest';
import { endLater } from '../../api/app.js';

describe('endLater (answers of one event-loop iteration written together)', () => {
  it('holds the answers ended in one iteration and writes them in order at its end', async () => {
    const written: string[] = [];
    const res = (name: string) => ({ end: ((text: string) => void written.push(`${name}:${text}`)) as never });
    endLater(res('a'), '1');
    endLater(res('b'), '2');
    await Promise.resolve(); // microtasks do not flush them
    expect(written).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(written).toEqual(['a:1', 'b:2']);
    endLater(res('c'), '3'); // a later iteration gets its own flush
    await new Promise((r) => setImmediate(r));
    expect(written).toEqual(['a:1', 'b:2', 'c:3']);
  });
});
