/** The results table's rows of the web console (scenario 21, bench/scenarios/console-speed.ts). */
import type { BenchResults } from '../model';
import { ms } from './format';

const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;

/** Rows of seven cells (measure, product, bare floor, engine floor, ratio, target, result). */
export function consoleRows(r: BenchResults, t: (id: string) => [string, string]): string[][] {
  const o = r.consoleSpeed;
  if (!o || !o.ok || o.value.status === 'skipped') {
    const why = !o
      ? 'not run'
      : !o.ok
        ? `error: ${o.error}`
        : `skipped: ${o.value.status === 'skipped' ? o.value.reason : ''}`;
    return [['Console speed (a headless browser)', why, '', '', '', ...t('console_board_first_render_p50_ms')]];
  }
  const { board, log, assets } = o.value;
  const n = (x: number) => x.toLocaleString('en');
  const br = assets.rawBytes > 0 ? ((assets.brBytes / assets.rawBytes) * 100).toFixed(0) : '—';
  const logRows: string[][] =
    'error' in log
      ? [
          [
            'Console: a session log of 100,000 lines, its last line shown',
            `not shown: ${log.error}`,
            '—',
            '—',
            '—',
            ...t('console_log_last_line_p50_ms'),
          ],
        ]
      : [
          [
            `Console: session log of ${n(log.lines)} lines, navigation to its last line shown (median of ${log.lastLineShown.n}, max); scrolled to its top`,
            `${ms(log.lastLineShown.p50)} (${ms(log.lastLineShown.max)}); top in ${ms(log.scrollToTop.p50)}`,
            '—',
            '—',
            '—',
            ...t('console_log_last_line_p50_ms'),
          ],
          [
            `Console: line elements in the log's DOM (${n(log.lines)} lines printed, the last ${n(log.linesKept)} kept by the page)`,
            n(log.lineElements),
            '—',
            '—',
            '—',
            ...t('console_log_lines_in_dom'),
          ],
        ];
  return [
    [
      `Console: board with ${n(board.tasks)} tasks, navigation to the first card visible (fresh page; median of ${board.firstRender.n}, max)`,
      `${ms(board.firstRender.p50)} (${ms(board.firstRender.max)})`,
      '—',
      '—',
      '—',
      ...t('console_board_first_render_p50_ms'),
    ],
    [
      `Console: card elements in the board's DOM (${n(board.tasks)} tasks, virtualized columns)`,
      n(board.cardsInDom),
      '—',
      '—',
      '—',
      ...t('console_board_cards_in_dom'),
    ],
    [
      `Console: live update, \`POST /v1/tasks\` until its card is on the open board (via /v1/events; median of ${board.liveUpdate.n}, max)`,
      `${ms(board.liveUpdate.p50)} (${ms(board.liveUpdate.max)})`,
      '—',
      '—',
      '—',
      ...t('console_live_update_p50_ms'),
    ],
    ...logRows,
    [
      `Console: assets of a first load (${assets.files.length} files, index.html included), br against raw; the browser's own transfer`,
      `${kib(assets.brBytes)} br / ${kib(assets.rawBytes)} raw (${br} %); the browser: ${kib(assets.browserTransferredBytes)} on the wire`,
      '—',
      '—',
      '—',
      '—',
      '—',
    ],
    [
      `Console: hashed assets fetched again by a second load (${assets.secondLoadNetworkRequests} request${assets.secondLoadNetworkRequests === 1 ? '' : 's'} reached the network: index.html, \`no-cache\`)`,
      assets.refetchedOnSecondLoad.length === 0 ? 'none' : assets.refetchedOnSecondLoad.join(', '),
      '—',
      '—',
      '—',
      ...t('console_assets_refetched'),
    ],
  ];
}
