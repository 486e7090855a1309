// ESLint: typescript-eslint's type-checked recommended rules over every TypeScript source, test
// and benchmark file; formatting is Prettier's (eslint-config-prettier turns off the rules it owns).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'bench/results/**', 'data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
      globals: { ...globals.node, ...globals.browser },
    },
    rules: {
      // `_x` marks a name kept on purpose (a parameter an interface asks for).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // An async method that implements an async interface (a store, a bus, a fake in a test)
      // without awaiting anything is correct: its callers get a promise either way.
      '@typescript-eslint/require-await': 'off',
      // node:test's test() and describe() return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] },
          ],
        },
      ],
    },
  },
  {
    // Tests read answers as untyped JSON on purpose (they check what the wire carries, not what a
    // type says it should), so member access on `any` is how they look; the test kit is theirs.
    files: ['packages/*/test/**/*.ts', 'packages/testkit/src/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Tests replace a store's or a class's method for a moment and keep the original to put back.
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    // Views read the Session and call its named actions: the SDK's Messenger and Conversations,
    // the trust store, the chat list, the message store and the database are the app layer's
    // (src/app), so a view that reached them would act behind the back of the state owner.
    files: ['packages/web/src/components/**/*.ts', 'packages/web/src/main.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'MemberExpression[property.name=/^(messenger|conv|trust|chats|store|db)$/]',
          message:
            'A view asks the Session (a named read or action: session.messages, session.keys, session.history or its own methods), never the objects behind it.',
        },
      ],
    },
  },
  {
    // Plain JavaScript, and the two TypeScript files no tsconfig holds (Vite compiles them alone).
    files: ['**/*.js', '**/*.mjs', '**/*.cjs', 'packages/web/src/sw.ts', 'packages/web/vite.config.ts'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: { ...globals.node, ...globals.browser } },
  },
  prettier,
);
