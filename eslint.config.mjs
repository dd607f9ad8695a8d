// The linter: typescript-eslint, type-aware where it pays, and the restrictions
// Temporal's workflow sandbox needs in workflows/. `make test` runs it (scripts/check-code.sh).
import tseslint from 'typescript-eslint';

const nodeBuiltins = [
  'fs',
  'path',
  'os',
  'child_process',
  'crypto',
  'net',
  'http',
  'https',
  'tls',
  'stream',
  'util',
  'events',
  'worker_threads',
  'timers',
  'process',
  'dns',
  'url',
  'zlib',
  'readline',
  'buffer',
  'assert',
];

export default tseslint.config(
  { ignores: ['node_modules/**', '.tools/**', '.data/**', 'console/dist/**', 'bench/results/**', 'test/histories/**'] },
  {
    files: ['**/*.ts', '**/*.mts', 'console/**/*.tsx'],
    extends: [tseslint.configs.base],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': [
        'error',
        { checksVoidReturn: { arguments: false, attributes: false } },
      ],
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      '@typescript-eslint/consistent-type-imports': [
        'error',
        { fixStyle: 'inline-type-imports', disallowTypeAnnotations: false },
      ],
    },
  },
  {
    // The console shows what users and agents wrote (titles, branch and file names, logs, diffs):
    // always as text nodes, never parsed as HTML, so nothing of it can run in the page.
    files: ['console/**/*.ts', 'console/**/*.tsx'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "JSXAttribute[name.name='dangerouslySetInnerHTML']",
          message: 'Render text, never HTML: what users and agents wrote must not run in the page.',
        },
        {
          selector: "Property[key.name='dangerouslySetInnerHTML']",
          message: 'Render text, never HTML: what users and agents wrote must not run in the page.',
        },
        {
          selector: 'MemberExpression[property.name=/^(innerHTML|outerHTML)$/]',
          message: 'Set textContent, never innerHTML/outerHTML: what users and agents wrote must not run in the page.',
        },
        {
          selector:
            'CallExpression[callee.property.name=/^(insertAdjacentHTML|write|writeln|createContextualFragment)$/]',
          message: 'No HTML from strings: build nodes with JSX (text is escaped).',
        },
      ],
      'no-restricted-globals': ['error', { name: 'localStorage', message: 'The token lives in sessionStorage only.' }],
      'no-eval': 'error',
      'no-implied-eval': 'error',
      'no-new-func': 'error',
    },
  },
  {
    // Untyped values cross into the product here only: request bodies are schema-checked, rows typed.
    files: ['client/gateway/**/*.ts', 'db/**/*.ts'],
    rules: { '@typescript-eslint/no-unsafe-return': 'error', '@typescript-eslint/no-unsafe-argument': 'error' },
  },
  {
    // Workflow code replays: no I/O, no clock, no randomness, no timers outside the SDK.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.flatMap((m) => [
            { name: m, message: 'No Node built-ins in workflow code (it runs in the workflow sandbox).' },
            { name: `node:${m}`, message: 'No Node built-ins in workflow code (it runs in the workflow sandbox).' },
          ]),
          patterns: [
            {
              group: ['../activities/*', '../executors/*', '../executors/*/*', '../db/*', '../git/*', '../ssh/*'],
              allowTypeImports: true,
              message: 'Workflows import activities (and what they use) only as types: call them through proxies.',
            },
          ],
        },
      ],
      'no-restricted-properties': [
        'error',
        {
          object: 'Date',
          property: 'now',
          message:
            'Use the workflow clock (Date in a workflow is replayed by the SDK; Date.now() reads it too, but keep it explicit: workflowInfo or sleep).',
        },
        { object: 'Math', property: 'random', message: 'Use the SDK (uuid4) for randomness.' },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' },
        { name: 'setInterval', message: 'Use sleep() in a loop.' },
        { name: 'process', message: 'No process in workflow code.' },
      ],
    },
  },
);
