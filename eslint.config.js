// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'var/**', 'coverage/**', 'web/vendor/**', 'test-artifacts/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        URL: 'readonly',
        fetch: 'readonly',
        Buffer: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // browser code, type-checked by tsc (tsconfig.web.json, checkJs): tsc resolves globals, not eslint
    files: ['web/**/*.js'],
    rules: { 'no-undef': 'off' },
  },
  {
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  // layout belongs to prettier (npm run format; checked by npm run lint)
  prettier,
  {
    // no source line over 120 characters: prettier wraps code, not strings or comments (after the prettier
    // config, which turns max-len off)
    files: ['api/**', 'schemas/**', 'engine/**', 'machines/**', 'web/**', 'bench/**', 'scripts/**', 'test/**'],
    rules: { 'max-len': ['error', { code: 120, ignoreUrls: false }] },
  },
);
