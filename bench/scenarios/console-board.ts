/**
 * The board of the web console with 1,000 tasks, in a real headless browser signed in as a user:
 * from the navigation to `#/` to the first card visible in a column (a fresh context each run: an
 * empty cache), the card elements in the DOM then (the columns are virtualized), and a live
 * update: a task created through the API until its card is on the open page (the page hears of
 * it on /v1/events and reads that one task, GET /v1/tasks/:id).
 */
import type { Browser } from 'playwright-core';
import type { BenchContext } from '../context';
import { summarize, type LatencySummary } from '../stats';
import { createTasks } from '../world';
import { signedInPage, timed } from './console-page';

export interface ConsoleBoardResult {
  tasks: number;
  /** Navigation to `#/` until the first card is visible in its column. */
  firstRender: LatencySummary;
  /** `[data-testid=task-card]` elements in the DOM once the board shows. */
  cardsInDom: number;
  /** `POST /v1/tasks` sent until its card is on the open page. */
  liveUpdate: LatencySummary;
}

const CARD = '[data-testid^="column-"] [data-testid="task-card"]';

export async function measureBoard(ctx: BenchContext, browser: Browser, tasks: number): Promise<ConsoleBoardResult> {
  const { api, services } = ctx;
  const runs = ctx.config.quick ? 3 : 5;
  const have = (await api.listAll<{ id: string }>('/v1/tasks')).length;
  if (have < tasks) await createTasks(api, tasks - have, [ctx.catalogRepos[0]!], 'console board');
  const onBoard = (await api.listAll<{ id: string }>('/v1/tasks')).length;

  const firstRender: number[] = [];
  let cardsInDom = 0;
  // One unmeasured run: the gateway's first answers (and Chromium's own start) are not the board's.
  for (let run = 0; run <= runs; run++) {
    const page = await signedInPage(browser, services.apiBase, services.tokens.user);
    const ms = await timed(async () => {
      await page.goto('/#/', { waitUntil: 'commit' });
      await page.locator(CARD).first().waitFor({ state: 'visible', timeout: 30_000 });
    });
    if (run > 0) firstRender.push(ms);
    cardsInDom = await page.locator('[data-testid="task-card"]').count();
    await page.context().close();
  }

  const page = await signedInPage(browser, services.apiBase, services.tokens.user);
  await page.goto('/#/');
  await page.locator(CARD).first().waitFor({ state: 'visible', timeout: 30_000 });
  const liveUpdate: number[] = [];
  try {
    for (let run = 0; run <= runs; run++) {
      await page.locator('[data-testid="connection"][data-state="live"]').waitFor({ timeout: 30_000 });
      const ms = await timed(async () => {
        const id = await api.createTask(`console live ${run}`, [ctx.catalogRepos[0]!.id]);
        await page.locator(`[data-testid="task-card"][data-task-id="${id}"]`).waitFor({ timeout: 30_000 });
      });
      if (run > 0) liveUpdate.push(ms);
    }
  } finally {
    await page.context().close();
  }
  return { tasks: onBoard, firstRender: summarize(firstRender), cardsInDom, liveUpdate: summarize(liveUpdate) };
}
