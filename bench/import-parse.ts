// npm run bench -- import-parse: the contacts CSV import's parsing and validation, without storage
// (functions/calls/contacts/csv-import.ts). A 100,000-row file with 10 variable columns (about 45 MB) is
// written once under .bench/, then each measurement runs in a child process of its own, so its peak RSS
// is its own and not the bench's:
//   import      readContactsCsv over a file stream, pages of 500 counted and dropped (as a consumer would
//               stage them), rows/s and peak RSS; again under --max-old-space-size=64 (a heap cap such as
//               a Lambda's memory size sets);
//   csv-parse   csv-parse alone over the same file (no validation): the baseline rate of the same run;
//   idle        the same modules loaded, nothing read: the RSS a process starts at;
//   uniqueness  the heap that BatchUniqueness takes for 100,000 numbers and 100,000 externalIds, and a Set
//               of 100,000 E.164 strings, measured with --expose-gc.
//   import-live the heap the import keeps alive (after a full GC, sampled);
// and, for the choice of libphonenumber's metadata set: what each set calls valid among random possible
// numbers, and each set's bundle cost (one entry per set bundled by esbuild, minified).
import { spawnSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, statSync, createWriteStream } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { parse } from 'csv-parse';
import { seededRng } from '../functions/platform/rng.ts';

const ROWS = 100_000;
const VARIABLES = 10;
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const file = join(root, '.bench', 'import-parse', `contacts-${ROWS}x${VARIABLES}.csv`);

/** Numbers of four plans, all distinct, mostly valid; every 50th is possible but not valid (US area code 555). */
function numberOf(i: number): string {
  if (i % 50 === 49) return `+1 555 ${String(1_000_000 + i).slice(-7)}`;
  switch (i % 4) {
    case 0:
      return `+44 20 ${String(70_000_000 + i).slice(0, 4)} ${String(70_000_000 + i).slice(4)}`;
    case 1:
      return `+1 (415) ${String(2_000_000 + i).slice(0, 3)}-${String(2_000_000 + i).slice(3)}`;
    case 2:
      return `+49 30 ${10_000_000 + i}`;
    default:
      return `+33 1 ${40_000_000 + i}`;
  }
}

const WORDS = ['alpha', 'Zoë', 'Müller', 'O\'Brien', '東京', 'north, east', 'said "yes"', 'plan B; later', 'line\nbreak', '00123', '=1+1'];

async function writeFixture(): Promise<void> {
  if (existsSync(file)) return;
  mkdirSync(dirname(file), { recursive: true });
  const rng = seededRng(26);
  const out = createWriteStream(file);
  const quote = (cell: string) => (/[",\n;]/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell);
  out.write(['number', 'external_id', 'timezone', ...Array.from({ length: VARIABLES }, (_, v) => `var_${v}`)].join(',') + '\r\n');
  for (let i = 0; i < ROWS; i++) {
    const cells = [numberOf(i), `crm-${String(i).padStart(8, '0')}`, i % 3 === 0 ? 'Europe/London' : ''];
    for (let v = 0; v < VARIABLES; v++) {
      let cell = '';
      // About 40 characters a cell, from words with quotes, delimiters, newlines and non-ASCII.
      while (cell.length < 36) cell += `${WORDS[rng.int(0, WORDS.length - 1)]} ${rng.int(0, 99_999)} `;
      cells.push(quote(cell.trimEnd()));
    }
    if (!out.write(cells.join(',') + '\r\n')) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
}

interface ChildResult {
  ms?: number;
  rows?: number;
  accepted?: number;
  flagged?: number;
  pages?: number;
  maxRssMb: number;
  [key: string]: unknown;
}

function child(mode: string, ...flags: string[]): ChildResult {
  const result = spawnSync(process.execPath, [...flags, fileURLToPath(import.meta.url), '--child', mode, file], { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (result.status !== 0) throw new Error(`import-parse child ${mode} failed: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as ChildResult;
}

const maxRssMb = () => process.resourceUsage().maxRSS / 1024;

async function runChild(mode: string, path: string): Promise<ChildResult> {
  const { readContactsCsv } = await import('../functions/calls/contacts/csv-import.ts');
  const { BatchUniqueness } = await import('../functions/calls/contacts/contact.ts');
  switch (mode) {
    case 'idle':
      return { maxRssMb: maxRssMb() };
    case 'import': {
      const started = performance.now();
      let pages = 0;
      let accepted = 0;
      let flagged = 0;
      let rows = 0;
      for await (const event of readContactsCsv(createReadStream(path), { skipInvalid: true })) {
        if (event.type === 'page') {
          pages++;
          accepted += event.contacts.length;
          flagged += event.contacts.filter((c) => !c.numberValid).length;
        } else if (event.type === 'end') rows = event.report.rows;
      }
      return { ms: performance.now() - started, rows, accepted, flagged, pages, maxRssMb: maxRssMb() };
    }
    case 'import-live': {
      // The heap the import keeps alive, sampled after a full GC every 50 pages (the GCs would lower the
      // other run's peak RSS, hence a run of its own).
      const gc = (globalThis as { gc?: () => void }).gc!;
      let live = 0;
      let pages = 0;
      for await (const event of readContactsCsv(createReadStream(path), { skipInvalid: true })) {
        if (event.type !== 'page' || ++pages % 50 !== 0) continue;
        gc();
        live = Math.max(live, process.memoryUsage().heapUsed);
      }
      return { maxRssMb: maxRssMb(), liveMb: live / 2 ** 20 };
    }
    case 'csv-parse': {
      const started = performance.now();
      let rows = -1;
      for await (const record of createReadStream(path).pipe(parse({ relax_quotes: true, relax_column_count: true }))) if (record) rows++;
      return { ms: performance.now() - started, rows, maxRssMb: maxRssMb() };
    }
    case 'uniqueness': {
      const gc = (globalThis as { gc?: () => void }).gc!;
      const heap = () => {
        gc();
        return process.memoryUsage().heapUsed;
      };
      // Each measured with the strings it holds, made at run time as a parser makes them.
      let before = heap();
      const unique = new BatchUniqueness();
      for (let i = 0; i < ROWS; i++) unique.claim({ number: `+4420${70_000_000 + i}`, externalId: `crm-${String(i).padStart(8, '0')}` }, i + 2);
      const withBoth = heap() - before;
      before = heap();
      const numbersOnly = new BatchUniqueness();
      for (let i = 0; i < ROWS; i++) numbersOnly.claim({ number: `+4420${70_000_000 + i}` }, i + 2);
      const withNumbers = heap() - before;
      before = heap();
      const set = new Set<string>();
      for (let i = 0; i < ROWS; i++) set.add(`+4420${70_000_000 + i}`);
      const withSet = heap() - before;
      if (unique.size + numbersOnly.size + set.size !== 3 * ROWS) throw new Error('not every contact was taken');
      return { maxRssMb: maxRssMb(), withBoth, withNumbers, withSet };
    }
    default:
      throw new Error(`unknown child mode ${mode}`);
  }
}

async function bundleSizes(): Promise<{ name: string; bytes: number; gzip: number }[]> {
  const { build } = await import('esbuild');
  const entry = (from: string) => `import { parsePhoneNumberWithError } from '${from}'; export const read = (t) => { const p = parsePhoneNumberWithError(t); return [p.number, p.isPossible(), p.isValid(), p.country]; };`;
  const sizes = [];
  for (const name of ['min', 'max', 'mobile']) {
    const result = await build({ stdin: { contents: entry(`libphonenumber-js/${name}`), resolveDir: root, loader: 'js' }, bundle: true, minify: true, platform: 'node', format: 'esm', write: false, logLevel: 'silent' });
    const bytes = result.outputFiles[0]!.contents;
    sizes.push({ name, bytes: bytes.length, gzip: gzipSync(bytes).length });
  }
  // The intake would bundle artefacts.ts: it must not pull in the number metadata.
  const artefacts = await build({ entryPoints: [join(root, 'functions/calls/artefacts.ts')], bundle: true, minify: true, platform: 'node', format: 'esm', write: false, logLevel: 'silent', metafile: true, external: ['@aws-sdk/*', '@smithy/*'] });
  const withNumbers = Object.keys(artefacts.metafile.inputs).some((input) => input.includes('libphonenumber-js'));
  sizes.push({ name: `artefacts.ts with zod, luxon and its platform imports, AWS SDK external (${withNumbers ? 'WITH' : 'without'} libphonenumber)`, bytes: artefacts.outputFiles[0]!.contents.length, gzip: gzipSync(artefacts.outputFiles[0]!.contents).length });
  return sizes;
}

/**
 * What each metadata set calls valid: random numbers (seeded) of 6–12 digits after every country's calling
 * code, those `max` calls possible, judged valid by each set.
 */
async function validityBySet(): Promise<{ possible: number; valid: Record<string, number> }> {
  const sets = { min: await import('libphonenumber-js/min'), max: await import('libphonenumber-js/max'), mobile: await import('libphonenumber-js/mobile') };
  const rng = seededRng(42);
  const valid: Record<string, number> = { min: 0, max: 0, mobile: 0 };
  let possible = 0;
  for (const country of sets.max.getCountries()) {
    for (let i = 0; i < 300; i++) {
      let digits = '';
      for (let d = rng.int(6, 12); d > 0; d--) digits += String(rng.int(0, 9));
      const text = `+${sets.max.getCountryCallingCode(country)}${digits}`;
      if (!sets.max.parsePhoneNumberFromString(text)?.isPossible()) continue;
      possible++;
      for (const [name, set] of Object.entries(sets)) if (set.parsePhoneNumberFromString(text)?.isValid()) valid[name]!++;
    }
  }
  return { possible, valid };
}

/** Microseconds a number takes to normalise, by calling code (one shared by several countries costs more). */
async function microsecondsPerNumber(): Promise<Record<string, number>> {
  const { normaliseNumber } = await import('../functions/calls/contacts/numbers.ts');
  const plans: Record<string, (i: number) => string> = {
    '+44': (i) => `+4420${70_000_000 + i}`,
    '+1': (i) => `+1415${2_000_000 + i}`,
    '+49': (i) => `+4930${10_000_000 + i}`,
    '+33': (i) => `+331${40_000_000 + i}`,
  };
  const n = 20_000;
  const result: Record<string, number> = {};
  for (const [code, numberAt] of Object.entries(plans)) {
    normaliseNumber(numberAt(0));
    const started = performance.now();
    for (let i = 0; i < n; i++) if (!normaliseNumber(numberAt(i)).ok) throw new Error(`${numberAt(i)} refused`);
    result[code] = ((performance.now() - started) * 1000) / n;
  }
  return result;
}

/** The import-parse section: see the comment at the top of this file. */
export async function benchImportParse(): Promise<{ lines: string[] }> {
  // Loaded here, not at the top: the children load this file too, and their RSS should not carry it.
  const { fmt } = await import('./support.ts');
  await writeFixture();
  const mb = statSync(file).size / 1e6;
  const idle = child('idle');
  const raw = child('csv-parse');
  const run = child('import');
  const live = child('import-live', '--expose-gc');
  const capped = child('import', '--max-old-space-size=64');
  const unique = child('uniqueness', '--expose-gc');
  const kb = (n: unknown) => fmt(Number(n) / 1024, 0);
  const lines = [
    `file: ${fmt(ROWS)} rows, ${VARIABLES} variable columns + number, external_id, timezone, ${fmt(mb, 1)} MB (${file.slice(root.length + 1)})`,
    `import (readContactsCsv, skipInvalid, pages of 500): ${fmt(run.rows!)} rows in ${fmt(run.ms! / 1000, 2)} s = ${fmt(run.rows! / (run.ms! / 1000))} rows/s; ${fmt(run.accepted!)} accepted (${fmt(run.flagged!)} flagged not valid) in ${fmt(run.pages!)} pages`,
    `csv-parse alone on the same file: ${fmt(raw.rows!)} rows in ${fmt(raw.ms! / 1000, 2)} s = ${fmt(raw.rows! / (raw.ms! / 1000))} rows/s; the import runs at ${fmt(raw.ms! / run.ms!, 2)} of it`,
    `peak RSS: import ${fmt(run.maxRssMb)} MB; csv-parse alone ${fmt(raw.maxRssMb)} MB; the same modules idle ${fmt(idle.maxRssMb)} MB; import with --max-old-space-size=64 ${fmt(capped.maxRssMb)} MB (${fmt(capped.rows! / (capped.ms! / 1000))} rows/s)`,
    `live heap of the import (after a full GC, every 50 pages, largest): ${fmt(Number(live['liveMb']), 1)} MB`,
    `uniqueness at ${fmt(ROWS)} contacts (heap, strings included): BatchUniqueness with numbers and externalIds ${kb(unique['withBoth'])} KiB, with numbers only ${kb(unique['withNumbers'])} KiB; a Set of the numbers ${kb(unique['withSet'])} KiB`,
  ];
  const perNumber = await microsecondsPerNumber();
  lines.push(`a number's normalisation (20,000 each): ${Object.entries(perNumber).map(([code, us]) => `${code} ${fmt(us, 1)} µs`).join(', ')}`);
  const validity = await validityBySet();
  lines.push(`metadata: of ${fmt(validity.possible)} random possible numbers over every country (seeded), valid by min ${fmt(validity.valid['min']!)}, by max ${fmt(validity.valid['max']!)}, by mobile ${fmt(validity.valid['mobile']!)}`);
  for (const size of await bundleSizes()) lines.push(`bundle, minified: ${size.name} ${kb(size.bytes)} KiB (gzip ${kb(size.gzip)} KiB)`);
  return { lines };
}

if (process.argv[2] === '--child') {
  const result = await runChild(process.argv[3]!, process.argv[4]!);
  console.log(JSON.stringify(result));
}
