/**
 * The layers, as docs/architecture.md "Layers" draws them (low to high): domain/ ← db/, git/, ssh/
 * ← executors/ ← activities/ ← workflows/ (activities as types only) ← worker/ ← client/. No
 * cycle anywhere, bench/ included (scripts/check-code.sh cruises it with the product).
 * Two imports the direction alone would allow are refused: workflows/ never import db/, not even
 * a type (a row's pure types live in domain/), and the gateway (client/) never imports
 * activities/: what both use lives below both (domain/, executors/support/).
 * client/ holds three programs, a folder each (gateway/, launcher/, cli/), that never import each
 * other; the CLI imports nothing below the HTTP API but domain/.
 * The web console (console/) imports nothing of the product: it reads the public API only.
 * `make test` runs it (scripts/check-code.sh); `make graph` draws it.
 */
const product = '^(domain|db|git|ssh|executors|activities|workflows|worker|client)/';
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Imports run one way: a circle makes every file in it depend on all the others.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'domain-imports-nothing-of-ours',
      severity: 'error',
      comment: 'domain/ is pure rules and types: it imports nothing of ours.',
      from: { path: '^domain/' },
      to: { path: '^(db|git|ssh|executors|activities|workflows|worker|client|bench|test)/' },
    },
    {
      name: 'adapters-stay-low',
      severity: 'error',
      comment: 'db/, git/ and ssh/ import only domain/ and each other, never a layer above.',
      from: { path: '^(db|git|ssh)/' },
      to: { path: '^(executors|activities|workflows|worker|client|bench|test)/' },
    },
    {
      name: 'executors-stay-below-activities',
      severity: 'error',
      comment:
        'An executor (executors/<kind>/) uses domain/, db/, git/, ssh/ and executors/support; the activities call it, never the other way round.',
      from: { path: '^executors/' },
      to: { path: '^(activities|workflows|worker|client|bench|test)/' },
    },
    {
      name: 'executors-are-independent',
      severity: 'error',
      comment:
        'One executor never imports another executor: what two share lives in executors/host/ or executors/support/, and the registry alone names them all.',
      from: { path: '^executors/(worktree|local|ssh|container)/', pathNot: '^executors/registry' },
      to: { path: '^executors/(worktree|local|ssh|container)/', pathNot: '^executors/$1/' },
    },
    {
      name: 'activities-never-import-up',
      severity: 'error',
      comment:
        'Activities never import workflows/, worker/ or client/: a step that starts a workflow gets its starter below (executors/support/follow-up-starts.ts).',
      from: { path: '^activities/' },
      to: { path: '^(workflows|worker|client|bench|test)/' },
    },
    {
      name: 'workflows-import-activities-as-types',
      severity: 'error',
      comment: "Workflow code runs in Temporal's sandbox: activities, git/ and ssh/ only as types (import type).",
      from: { path: '^workflows/' },
      to: { path: '^(activities|executors|git|ssh)/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'workflows-never-import-db',
      severity: 'error',
      comment:
        'Workflows never import db/, not even a type: the pure types a row and a workflow share (a session state) live in domain/.',
      from: { path: '^workflows/' },
      to: { path: '^db/' },
    },
    {
      name: 'workflows-never-import-up',
      severity: 'error',
      comment: 'Workflows never import the worker or the client.',
      from: { path: '^workflows/' },
      to: { path: '^(worker|client|bench|test)/' },
    },
    {
      name: 'worker-never-imports-client',
      severity: 'error',
      comment: 'The worker is below the client (the gateway runs a launch worker, not the other way round).',
      from: { path: '^worker/' },
      to: { path: '^(client|bench|test)/' },
    },
    {
      name: 'gateway-never-imports-activities',
      severity: 'error',
      comment:
        'The gateway (client/) never reaches into activities/: what both use lives below both (domain/ for pure types, executors/support/ for the starter of prepared cleanup jobs). The activities are assembled in worker/ (the launch worker the gateway runs included), never by the gateway itself.',
      from: { path: '^client/' },
      to: { path: '^activities/' },
    },
    {
      name: 'cli-talks-only-to-the-api',
      severity: 'error',
      comment:
        'tws (client/cli/) reaches the service only through its HTTP API: it imports no code of the gateway, the launcher, the database, git, the executors, the workflows or the worker (domain/ rules and client/api-record.ts, the record it reads, are all it shares).',
      from: { path: '^client/cli/' },
      to: { path: '^(client/(gateway|launcher)|db|git|ssh|executors|activities|workflows|worker)/' },
    },
    {
      name: 'launcher-never-imports-cli-or-gateway',
      severity: 'error',
      comment:
        'The launcher (client/launcher/) starts the gateway as a process and talks to it over HTTP: it imports neither the gateway nor the CLI (what it shares with tws is client/api-record.ts).',
      from: { path: '^client/launcher/' },
      to: { path: '^client/(cli|gateway)/' },
    },
    {
      name: 'gateway-never-imports-cli-or-launcher',
      severity: 'error',
      comment: 'The gateway (client/gateway/) is a service of its own: it imports neither the CLI nor the launcher.',
      from: { path: '^client/gateway/' },
      to: { path: '^client/(cli|launcher)/' },
    },
    {
      name: 'shared-client-files-import-no-program',
      severity: 'error',
      comment:
        'What the programs of client/ share (client/*.ts) imports none of them, or the one importing it would import the others.',
      from: { path: '^client/[^/]+$' },
      to: { path: '^client/(cli|launcher|gateway)/' },
    },
    {
      name: 'console-reads-only-the-public-api',
      severity: 'error',
      comment:
        'The web console (console/) runs in the browser and acts only through the public API (/v1): it imports nothing of the product, whose rules it learns from the answers.',
      from: { path: '^console/' },
      to: { path: '^(domain|db|git|ssh|executors|activities|workflows|worker|client|bench|test)/' },
    },
    {
      name: 'product-never-imports-the-console',
      severity: 'error',
      comment: 'The gateway serves the console as built files (console/dist), never imports its code.',
      from: { path: product },
      to: { path: '^console/' },
    },
    {
      name: 'product-never-imports-tests-or-bench',
      severity: 'error',
      from: { path: product },
      to: { path: '^(test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|\\.tools|\\.data)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
