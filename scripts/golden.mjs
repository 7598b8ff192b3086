// A golden comparison for restructurings: every figure and message this tree's CLI and
// WebAssembly modules give, over many setups, set against those of another build (a checkout of
// an earlier commit, built with scripts/build.sh). A restructuring that changes no arithmetic
// must print the same, byte for byte.
//
//   node scripts/golden.mjs BASE_DIR [--cli-only]
//
// BASE_DIR is the root of the other checkout, with its build/trainmem and build-wasm/ built
// (build/trainmem alone, here and there, with --cli-only). The
// cases come from the table of settings: each base setup below with every setting at each of a
// few values (every choice, each bound and the default; under a stack, with its replayed step's
// timeline too), each base under every view the CLI prints, and each launch example. Prints each difference (the first 20 in full) and exits 1 if
// there is any.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const require = createRequire(import.meta.url);
const here = resolve(new URL('..', import.meta.url).pathname);
const base = process.argv[2] && resolve(process.argv[2]);
const cliOnly = process.argv.includes('--cli-only');
if (!base) {
  console.error('usage: node scripts/golden.mjs BASE_DIR (a built checkout to compare with)');
  process.exit(2);
}

/** The setups each case starts from: flags, as a person would type them. */
const BASES = [
  [],
  ['--model', 'llama3-70b', '--dp', '8', '--zero', '3', '--tp', '4', '--sequence-parallel', '--pp', '2'],
  [
    '--stack',
    'megatron',
    '--tp',
    '2',
    '--sequence-parallel',
    '--pp',
    '2',
    '--dp',
    '4',
    '--zero',
    '1',
    '--logits',
  ],
  [
    '--stack',
    'torchtitan',
    '--dp',
    '8',
    '--zero',
    '3',
    '--recompute',
    'full',
    '--logits',
    '--loss',
    'fp32-upcast',
  ],
  [
    '--stack',
    'hf',
    '--precision',
    'bf16',
    '--lora-rank',
    '16',
    '--base-weights',
    'nf4',
    '--recompute',
    'full',
    '--device',
    'rtx-4090',
  ],
  ['--stack', 'deepspeed', '--dp', '8', '--zero', '3', '--recompute', 'selective'],
  ['--stack', 'torchtune', '--precision', 'bf16', '--recompute', 'full', '--logits', '--loss', 'chunked'],
  [
    '--model',
    'deepseek-v3',
    '--dp',
    '64',
    '--ep',
    '8',
    '--pp',
    '8',
    '--pp-first-layers',
    '6',
    '--pp-last-layers',
    '7',
    '--zero',
    '1',
  ],
  ['--model', 'mixtral-8x7b', '--dp', '8', '--ep', '8', '--zero', '1', '--capacity-factor', '1.25'],
  [
    '--lora-rank',
    '8',
    '--offload',
    'optimizer',
    '--host-gb',
    '512',
    '--offload-activations',
    '--recompute',
    'full',
  ],
  ['--precision', 'fp8-mixed', '--tp', '4', '--sequence-parallel', '--cp', '2', '--dp', '2', '--zero', '1'],
  [
    '--activations',
    'llama-block',
    '--no-flash-attention',
    '--dropout',
    'on',
    '--seq-len',
    '4096',
    '--micro-batch',
    '2',
  ],
];
const VIEWS = [
  [],
  ['--json'],
  ['--explain', '--json'],
  ['--timeline', '--json'],
  ['--savings', '--json'],
  ['--fit-map', '--json'],
  ['--saved-tensors'],
];

function loadModule(dir, name, factory) {
  const create = require(join(dir, 'build-wasm', `${name}.js`));
  return create({ wasmBinary: readFileSync(join(dir, 'build-wasm', `${name}.wasm`)) });
}

/** Each setting's values to try: every choice, the bounds, the default and a value between. */
function valuesOf(setting, kinds) {
  if (setting.kind === kinds.SWITCH) return ['on', 'off'];
  if (setting.kind === kinds.CHOICE) return setting.choices.map((choice) => choice.id);
  const values = new Set([setting.defaultText, String(setting.min), String(setting.max)]);
  if (setting.kind === kinds.WHOLE)
    values.add(String(Math.min(setting.max, 2 * Math.max(1, Number(setting.defaultText)))));
  else values.add(String((setting.min + Math.min(setting.max, 100)) / 2));
  return [...values];
}

const flagOf = (setting, text, kinds) =>
  setting.kind === kinds.SWITCH
    ? [
        setting.id === 'flash-attention'
          ? `--no-flash-attention=${text === 'on' ? 'false' : 'true'}`
          : `--${setting.id}=${text === 'on' ? 'true' : 'false'}`,
      ]
    : [`--${setting.id}`, text];

function cases(core) {
  const kinds = core.SettingKind;
  const settings = core.settings();
  const list = [];
  for (const [index, flags] of BASES.entries()) {
    for (const view of VIEWS) list.push([...flags, ...view]);
    if (index < 3) list.push([...flags, '--fit', '--json']);
    for (const setting of settings) {
      if (setting.id === 'model' && index > 0) continue;
      for (const text of valuesOf(setting, kinds)) {
        list.push([...flags, ...flagOf(setting, text, kinds), '--json']);
        // Under a stack, the replayed step allocation by allocation too: an order changed
        // without moving a peak shows in the timeline.
        if (flags.includes('--stack'))
          list.push([...flags, ...flagOf(setting, text, kinds), '--timeline', '--json']);
      }
    }
  }
  const examples = join(here, 'docs', 'examples');
  for (const file of readdirSync(examples).filter((name) => !name.endsWith('config.json'))) {
    for (const extra of [
      [],
      ['--world-size', '8'],
      ['--device', 'rtx-4090'],
      ['--config', join(examples, 'llama3.1-8b-config.json')],
    ]) {
      list.push(['--launch', join(examples, file), ...extra]);
      list.push(['--launch', join(examples, file), ...extra, '--json']);
    }
  }
  list.push(['--config', join(examples, 'llama3.1-8b-config.json'), '--json']);
  list.push(['--list-models'], ['--list-devices'], ['--compare-measured', '--json'], ['--help']);
  return list;
}

function run(dir, args) {
  const result = spawnSync(join(dir, 'build', 'trainmem'), args, { encoding: 'utf8', maxBuffer: 1 << 28 });
  return `${result.status}\n${result.stdout}\n${result.stderr}`;
}

/** The setup the flags give, through changeSetting, or the refusal's text. */
function setupOf(core, args) {
  let setup = core.defaultSetup();
  for (let index = 0; index < args.length; index += 1) {
    const flag = args[index];
    if (
      !flag.startsWith('--') ||
      ['--json', '--explain', '--timeline', '--savings', '--fit-map', '--saved-tensors', '--fit'].includes(
        flag,
      )
    )
      continue;
    let [id, text] = flag.slice(2).split('=');
    if (id === 'no-flash-attention') [id, text] = ['flash-attention', text === 'false' ? 'on' : 'off'];
    const setting = core.settings().find((candidate) => candidate.id === id);
    if (!setting) return null;
    if (text === undefined) text = setting.kind === core.SettingKind.SWITCH ? 'on' : args[++index];
    else if (setting.kind === core.SettingKind.SWITCH) text = text === 'true' ? 'on' : 'off';
    const change = core.changeSetting(setup, id, text, 65536);
    if (change.answer.status !== core.Status.OK) return `refused: ${change.answer.message}`;
    setup = change.setup;
  }
  return setup;
}

const stable = (value) =>
  JSON.stringify(value, (key, item) =>
    item && item.constructor?.name === 'Object'
      ? Object.fromEntries(Object.entries(item).sort())
      : typeof item === 'object' && item !== null && 'value' in item && Object.keys(item).length === 1
        ? item.value
        : item,
  );

function apiOutputs(core, json, args) {
  const setup = setupOf(core, args);
  if (setup === null || typeof setup === 'string') return String(setup);
  return stable({
    estimate: core.estimateMemory(setup),
    view: core.workshopView(setup, 16),
    json: json.setupToJson(setup),
    csv: json.setupToCsv(setup),
  });
}

/**
 * A build's estimator and its JSON writer: the full module (trainmem-full) where it has one, or,
 * in a build from before the first view's module held the plate's view alone (9a300c7 and
 * earlier), trainmem and trainmem-json.
 */
const modulesOf = (dir) =>
  existsSync(join(dir, 'build-wasm', 'trainmem-full.wasm'))
    ? loadModule(dir, 'trainmem-full').then((full) => [full, full])
    : Promise.all([loadModule(dir, 'trainmem'), loadModule(dir, 'trainmem-json')]);

// The cases come from the other build's table, the setups from each build's own core.
const [baseCore, baseJson] = await modulesOf(base);
const [hereCore, hereJson] = cliOnly ? [null, null] : await modulesOf(here);
const all = cases(baseCore);
let differences = 0;
for (const [index, args] of all.entries()) {
  const pairs = [['CLI', run(base, args), run(here, args)]];
  if (!cliOnly)
    pairs.push(['API', apiOutputs(baseCore, baseJson, args), apiOutputs(hereCore, hereJson, args)]);
  for (const [what, before, after] of pairs) {
    if (before === after) continue;
    differences += 1;
    if (differences <= 20) {
      console.log(`--- ${what}: trainmem ${args.join(' ')}`);
      const lines = [before.split('\n'), after.split('\n')];
      const first = lines[0].findIndex((line, at) => line !== lines[1][at]);
      console.log(
        `  before: ${lines[0]
          .slice(first, first + 3)
          .join('\n          ')
          .slice(0, 600)}`,
      );
      console.log(
        `  after:  ${lines[1]
          .slice(first, first + 3)
          .join('\n          ')
          .slice(0, 600)}`,
      );
    }
  }
  if ((index + 1) % 500 === 0) console.error(`golden: ${index + 1} of ${all.length} cases`);
}
console.log(
  `golden: ${all.length} cases, each through the CLI${cliOnly ? '' : ' and the API'}: ${differences} differences`,
);
process.exit(differences === 0 ? 0 : 1);
