/** Writes latest.json, latest.md and latest.svg; each through a .tmp file so a reader never sees half a file. */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { BenchResults } from '../model';
import { renderMarkdown } from './markdown';
import { renderSvg } from './svg';

export async function writeResults(dir: string, results: BenchResults): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const files: [string, string][] = [
    ['latest.json', JSON.stringify(results, null, 2) + '\n'],
    ['latest.md', renderMarkdown(results)],
    ['latest.svg', renderSvg(results)],
  ];
  for (const [name, content] of files) {
    const target = path.join(dir, name);
    await writeFile(`${target}.tmp`, content);
    await rename(`${target}.tmp`, target);
  }
  return files.map(([name]) => path.join(dir, name));
}
