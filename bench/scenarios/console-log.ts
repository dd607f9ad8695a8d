/**
 * A session log of 100,000 lines on a task's page of the web console: an agent prints them and
 * ends; a fresh page (signed in, empty cache) at `#/tasks/<id>` until the last line is shown, the
 * line elements in the DOM then (the log is virtualized), and a scroll to its top until its first
 * kept line is shown (the page keeps the log's last 512 KiB, console/src/parts/session-log.tsx).
 */
import type { Browser, Page } from 'playwright-core';
import { agentEndedCleanly } from '../agent-ended';
import type { BenchContext } from '../context';
import { summarize, type LatencySummary } from '../stats';
import { signedInPage, timed } from './console-page';

export interface ConsoleLogResult {
  lines: number;
  /** Navigation to the task's page until its log shows the last line. */
  lastLineShown: LatencySummary;
  /** `.log-line` elements in the log's DOM when the last line shows. */
  lineElements: number;
  /** The lines the page holds (its scroll height over the line height). */
  linesKept: number;
  /** Scrolled to the top until the first kept line is shown. */
  scrollToTop: LatencySummary;
}

const LOG = '[data-testid="session-log"]';

/** Until the log shows the line `log line <n>` (a locator: the page's CSP allows no evaluated string). */
async function lineShown(page: Page, n: number): Promise<void> {
  const lines = page.locator(`${LOG} .log-line`);
  try {
    await lines.filter({ hasText: new RegExp(`^log line ${n}\\s*$`) }).waitFor({ state: 'attached', timeout: 20_000 });
  } catch (err) {
    const shown = (await lines.allTextContents()).map((t) => t.trim());
    const logs = await page.locator(LOG).count();
    throw new Error(
      `log line ${n} not shown: ${logs} logs on the page, lines shown ${shown.length} (${shown.slice(0, 2).join(' | ')} … ${shown.slice(-2).join(' | ')}): ${String(err)}`,
    );
  }
}

export async function measureLog(ctx: BenchContext, browser: Browser, lines: number): Promise<ConsoleLogResult> {
  const { api, services } = ctx;
  const runs = ctx.config.quick ? 2 : 3;
  const taskId = await api.createTask('console log', [ctx.catalogRepos[0]!.id]);
  const launched = await api.call<{ sessionId: string }>('POST', `/v1/tasks/${taskId}/sessions`, {
    executorType: 'worktree',
    agentProfile: 'shell',
    command: ['sh', '-c', `seq 1 ${lines} | sed 's/^/log line /'`],
  });
  if (launched.status !== 201) throw new Error(`log launch: ${launched.status} ${JSON.stringify(launched.body)}`);
  await agentEndedCleanly(ctx, launched.body.sessionId, "the log's agent");

  const shown: number[] = [];
  const toTop: number[] = [];
  let lineElements = 0;
  let linesKept = 0;
  for (let run = 0; run < runs; run++) {
    const page = await signedInPage(browser, services.apiBase, services.tokens.user);
    try {
      shown.push(
        await timed(async () => {
          await page.goto(`/#/tasks/${taskId}`, { waitUntil: 'commit' });
          await lineShown(page, lines);
        }),
      );
      const box = page.locator(LOG);
      lineElements = await box.locator('.log-line').count();
      const lineHeight = await box
        .locator('.log-line')
        .first()
        .evaluate((el) => el.getBoundingClientRect().height);
      linesKept = Math.min(
        lines,
        Math.round(
          (await box.locator('.column-inner').evaluate((el) => el.getBoundingClientRect().height)) / lineHeight,
        ),
      );
      // A line near the top: the first kept one may be cut at its start (the cap counts characters).
      const firstKept = lines - linesKept + 3;
      toTop.push(
        await timed(async () => {
          await box.evaluate((el) => el.scrollTo({ top: 0 }));
          await lineShown(page, firstKept);
        }),
      );
    } finally {
      await page.context().close();
    }
  }
  return { lines, lastLineShown: summarize(shown), lineElements, linesKept, scrollToTop: summarize(toTop) };
}
