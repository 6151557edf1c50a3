// What a Lambda bundle gets for `node:http` (an esbuild alias, lib/constructs/function.ts `BUNDLING_ALIASES`):
// the same module, loaded with require() (the bundle's banner makes one). An ES module `import` of a Node
// built-in makes Node build its ES module facade, which reads every export, lazy ones included; one of
// node:http's loads Node's own undici (fetch, WebSocket), tens of ms of every cold start, though no redial
// function uses it (docs/benchmarks.md, "Lambda bundles"). Through require() node:http is the same object,
// without the facade. Inside, the module is required as `http`: the alias would turn `node:http` back into
// this file. Nothing in redial imports this module.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the point of the module: a CommonJS load of node:http
const http: unknown = require('http');
module.exports = http;
