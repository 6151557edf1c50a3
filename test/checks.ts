// The type check and the lint in one process over one TypeScript program (`npm test` runs this beside
// vitest; `npm run typecheck` and `npm run lint` stay for a check alone). Typed lint rules need the same
// program tsc builds and checks, and built twice it was a third of their joint CPU: `tsc --noEmit` 54
// core-s and `eslint .` 143 core-s apart, 148 core-s together (program 21, tsc's diagnostics 32, lint 95),
// 2026-12-03 on 2 shared cores. ESLint takes the built program through typescript-eslint's
// `parserOptions.programs` and asks its checker, whose types the diagnostics already computed, instead of
// a project service of its own. Prints tsc's diagnostics and ESLint's report; exits 1 if either has an error.
import { ESLint } from 'eslint';
import ts from 'typescript';

const root = process.cwd();
const configPath = ts.findConfigFile(root, ts.sys.fileExists.bind(ts.sys), 'tsconfig.json');
if (!configPath) throw new Error(`no tsconfig.json at ${root}`);
const parsed = ts.getParsedCommandLineOfConfigFile(configPath, {}, {
  ...ts.sys,
  onUnRecoverableConfigFileDiagnostic: (d) => {
    throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  },
});
if (!parsed) throw new Error(`${configPath} could not be read`);

const started = performance.now();
const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options, projectReferences: parsed.projectReferences, configFileParsingDiagnostics: parsed.errors });
const diagnostics = ts.getPreEmitDiagnostics(program);
const typecheckSeconds = (performance.now() - started) / 1000;
const formatHost: ts.FormatDiagnosticsHost = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' };

const eslint = new ESLint({
  // Every .ts file ESLint lints is one of tsconfig.json's (a file outside it fails as it does with the
  // project service); eslint.config.js's own .js files stay untyped.
  overrideConfig: [{ files: ['**/*.ts'], languageOptions: { parserOptions: { projectService: false, programs: [program] } } }],
});
const results = await eslint.lintFiles(['.']);
const lintSeconds = (performance.now() - started) / 1000 - typecheckSeconds;
const lintErrors = results.reduce((n, r) => n + r.errorCount + r.fatalErrorCount, 0);
const report = await (await eslint.loadFormatter('stylish')).format(results);

const errors = diagnostics.filter((d) => d.category === ts.DiagnosticCategory.Error).length;
console.log(`typecheck: ${errors === 0 ? 'ok' : `${errors} errors`} in ${typecheckSeconds.toFixed(0)} s (${program.getSourceFiles().length} files)`);
if (diagnostics.length > 0) console.log(ts.formatDiagnostics(diagnostics, formatHost).trimEnd());
console.log(`lint: ${lintErrors === 0 ? 'ok' : `${lintErrors} errors`} in ${lintSeconds.toFixed(0)} s (${results.length} files)`);
if (report.trim()) console.log(report.trimEnd());
process.exitCode = errors > 0 || lintErrors > 0 ? 1 : 0;
