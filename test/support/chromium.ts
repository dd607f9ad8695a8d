/**
 * The headless Chromium that the console's browser tests (browser.ts) and the benchmark's console
 * rows (bench/scenarios/console-speed.ts) drive with playwright-core, which downloads no browser
 * of its own: where it is, and how it is started.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Where the browser is: TWS_CHROMIUM if set, else Debian's chromium-headless-shell, else Debian's chromium. */
export function chromiumExecutable(): string {
  const candidates = [
    process.env.TWS_CHROMIUM,
    // The binaries, not /usr/bin's wrapper scripts: a shell that does not exec stood between
    // playwright and the browser it ends.
    '/usr/lib/chromium/chromium-headless-shell',
    '/usr/lib/chromium/chromium',
  ].filter((p): p is string => Boolean(p));
  const found = candidates.find((p) => existsSync(p));
  if (!found)
    throw new Error(
      `no headless Chromium at ${candidates.join(', ')}: make setup installs Debian's chromium-headless-shell (as root with apt-get), or set TWS_CHROMIUM`,
    );
  return found;
}

/** A headless Chromium (the one chromiumExecutable finds). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumExecutable(),
    // As root Chromium refuses to start with its sandbox; the pages it opens are our own.
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    headless: true,
  });
}
