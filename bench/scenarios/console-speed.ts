/**
 * The web console's speed (issue 66), in a real headless browser (test/support/chromium.ts:
 * Debian's chromium-headless-shell driven by playwright-core): the board with 1,000 tasks (first
 * render, live update, cards in the DOM), a session log of 100,000 lines (its end shown, lines in
 * the DOM, a scroll), and the assets (br against raw, a second load from the cache). With no
 * browser on the machine the rows are skipped, with the reason.
 */
import type { Browser } from 'playwright-core';
import { chromiumExecutable, launchChromium } from '../../test/support/chromium';
import type { BenchContext } from '../context';
import { measureAssets, type ConsoleAssetsResult } from './console-assets';
import { measureBoard, type ConsoleBoardResult } from './console-board';
import { measureLog, type ConsoleLogResult } from './console-log';

export type ConsoleSpeedResult =
  | { status: 'skipped'; reason: string }
  | {
      status: 'measured';
      browser: string;
      board: ConsoleBoardResult;
      /** Or why its last line was not shown (a miss of the product, not of the benchmark). */
      log: ConsoleLogResult | { error: string };
      assets: ConsoleAssetsResult;
    };

export async function runConsoleSpeed(ctx: BenchContext): Promise<ConsoleSpeedResult> {
  let browserPath: string;
  try {
    browserPath = chromiumExecutable();
  } catch (err) {
    return { status: 'skipped', reason: err instanceof Error ? err.message : String(err) };
  }
  let browser: Browser;
  try {
    browser = await launchChromium();
  } catch (err) {
    return { status: 'skipped', reason: `the browser at ${browserPath} did not start: ${String(err)}` };
  }
  try {
    const tasks = Number(process.env.BENCH_CONSOLE_TASKS) || (ctx.config.quick ? 200 : 1000);
    const lines = Number(process.env.BENCH_CONSOLE_LOG_LINES) || 100_000;
    ctx.log(`console: the assets`);
    const assets = await measureAssets(browser, ctx.services.apiBase);
    ctx.log(`console: the board with ${tasks} tasks`);
    const board = await measureBoard(ctx, browser, tasks);
    ctx.log(`console: a log of ${lines} lines`);
    // A log that never shows its end is the console's miss: the board's and the assets' figures stand.
    const log = await measureLog(ctx, browser, lines).catch((err: unknown) => ({
      error: err instanceof Error ? err.message : String(err),
    }));
    return { status: 'measured', browser: `${browserPath} ${browser.version()}`, board, log, assets };
  } finally {
    await browser.close();
  }
}
