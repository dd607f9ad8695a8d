/**
 * A container agent's variables reach it through the image's shell (executors/container/agents.ts):
 * written as shell assignments, read from a descriptor and evaluated. Every value comes out exactly
 * as given, whatever it holds (quotes, `$(…)`, newlines): a value is data, never a command.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { shellExports } from '../executors/container/agents';

describe('a container agent’s variables', () => {
  it('arrive exactly, and nothing in a value runs', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tws-entry-'));
    const canary = path.join(dir, 'ran');
    const env: Record<string, string> = {
      PLAIN: 'value',
      QUOTES: `it's "quoted" '' \\' end'`,
      SUBST: `$(touch ${canary}) \`touch ${canary}\` $HOME \${PATH}`,
      LINES: 'one\ntwo\n\nthree\n',
      EMPTY: '',
    };
    const file = path.join(dir, 'vars');
    writeFileSync(file, shellExports(env));
    const fd = openSync(file, 'r');
    try {
      // As the entry script reads them: from descriptor 5, evaluated; then the variables as env(1) prints them.
      const run = spawnSync('/bin/sh', ['-c', 'eval "$(cat <&5)" && exec 5<&- && env -0', 'tws-agent'], {
        stdio: ['ignore', 'pipe', 'pipe', 'ignore', 'ignore', fd],
        env: {},
        encoding: 'utf8',
      });
      expect(run.stderr).toBe('');
      const seen = Object.fromEntries(
        run.stdout
          .split('\0')
          .filter(Boolean)
          .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      );
      // A value's trailing newlines are kept: the assignment is quoted, not a command substitution's output.
      for (const [name, value] of Object.entries(env)) expect(seen[name], name).toBe(value);
      expect(existsSync(canary)).toBe(false);
    } finally {
      closeSync(fd);
    }
  });

  it('a name that is not a shell name is refused, never written', () => {
    expect(() => shellExports({ 'BAD;rm -rf /': 'x' })).toThrow();
    expect(() => shellExports({ 'A=B': 'x' })).toThrow();
  });
});
