/** What the console keeps of a live log (console/src/log-buffer.ts): the end, within its cap. */
import { describe, expect, it } from 'vitest';
import { appendLog, emptyLog } from '../console/src/log-buffer';

const text = (buffer: { lines: string[] }) => buffer.lines.join('\n');

describe('a live log keeps its last characters within the cap [console logs]', () => {
  it('joins chunks cut mid-line and keeps everything under the cap', () => {
    let log = emptyLog();
    for (const chunk of ['hel', 'lo\nwor', 'ld\n', 'again']) log = appendLog(log, chunk, 1000);
    expect(log.lines).toEqual(['hello', 'world', 'again']);
    expect(log.size).toBe('hello\nworld\nagain'.length);
    expect(log.dropped).toBe(0);
  });

  it('drops whole lines from the front past the cap, and counts what it dropped', () => {
    let log = emptyLog();
    let all = '';
    for (let i = 0; i < 500; i++) {
      const chunk = `line ${i}\n`;
      all += chunk;
      log = appendLog(log, chunk, 100);
    }
    expect(log.size).toBeLessThanOrEqual(100);
    expect(text(log)).toBe(all.slice(all.length - log.size));
    expect(log.dropped + log.size).toBe(all.length);
    expect(log.lines.at(-2)).toBe('line 499');
  });

  it('keeps the end of one line longer than the cap', () => {
    const log = appendLog(emptyLog(), 'x'.repeat(50) + 'END', 10);
    expect(log.lines).toEqual(['x'.repeat(7) + 'END']);
    expect(log.size).toBe(10);
    expect(log.dropped).toBe(43);
  });

  it('leaves the buffer as it was for an empty chunk', () => {
    const log = appendLog(emptyLog(), 'a', 10);
    expect(appendLog(log, '', 10)).toBe(log);
  });
});
