// The front end builds into one classic script and one stylesheet, which
// the C++ side inlines into its single page (tools/export/app_page.cc): the
// page then works both behind the token-checking server and from file://.
// No import of 'vite' here: node_modules live in the build tree.
export default {
  root: new URL('.', import.meta.url).pathname,
  logLevel: 'warn',
  build: {
    emptyOutDir: true,
    modulePreload: false,
    cssCodeSplit: false,
    sourcemap: false,
    target: 'es2020',
    rollupOptions: {
      input: new URL('./src/main.ts', import.meta.url).pathname,
      output: {
        format: 'iife',
        entryFileNames: 'app.js',
        assetFileNames: 'app[extname]',
        inlineDynamicImports: true,
      },
    },
  },
};
