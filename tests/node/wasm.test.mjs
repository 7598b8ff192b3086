// The WebAssembly module, loaded under Node exactly as the page loads it, gives the plate's
// figures and the core's messages.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { before, describe, it } from 'node:test';

const require = createRequire(import.meta.url);
const createTrainmemModule = require('../../build-wasm/trainmem-full.js');

let core;

const plateSetup = (overrides = {}) => ({
  ...core.defaultSetup(),
  modelId: 'llama3-8b',
  sequenceLength: 8192,
  microBatchSequences: 1,
  flashAttention: true,
  ...overrides,
});

describe('the trainmem WebAssembly module', () => {
  before(async () => {
    // Emscripten 3.1.6 under Node 20 would fetch the .wasm by path; hand it the bytes.
    core = await createTrainmemModule({ wasmBinary: readFileSync('build-wasm/trainmem-full.wasm') });
  });

  it('lists the presets, the three Llama 3 sizes first, with their shapes', () => {
    const presets = core.presetModels();
    assert.deepEqual(
      presets.slice(0, 3).map((p) => p.id),
      ['llama3-8b', 'llama3-70b', 'llama3-405b'],
    );
    assert.ok(presets.some((p) => p.id === 'mixtral-8x7b' && p.numExperts === 8));
    // Today's fields travel too: DeepSeek-V3's latent attention and experts, Qwen3's q/k norms.
    const deepseek = presets.find((p) => p.id === 'deepseek-v3');
    assert.equal(deepseek.kvLoraRank, 512);
    assert.equal(deepseek.qLoraRank, 1536);
    assert.equal(deepseek.moeFfnHiddenSize, 2048);
    assert.equal(deepseek.sharedExpertFfnHiddenSize, 2048);
    assert.equal(deepseek.numDenseLayers, 3);
    assert.equal(presets.find((p) => p.id === 'qwen3-8b').qkNorm, true);
    assert.equal(presets[0].hiddenSize, 4096);
    assert.equal(presets[2].numLayers, 126);
  });

  it('gives the plate figures for Llama 3 8B with FlashAttention at 8,192 tokens', () => {
    const estimate = core.estimateMemory(plateSetup());
    assert.equal(estimate.answer.status, core.Status.OK);
    assert.equal(estimate.numParameters, 8030261248);
    assert.equal(estimate.bytes.modelStatesBytes, 16 * 8030261248);
    assert.equal(estimate.bytes.activationsBytes, 36507222016);
    assert.equal(core.formatBytes(estimate.bytes.modelStatesBytes, 1), '128.5 GB');
    assert.equal(core.formatBytes(estimate.bytes.activationsBytes, 1), '36.5 GB');
    assert.equal(core.formatBytes(estimate.bytes.totalBytes, 1), '165.0 GB');
    assert.equal(estimate.devicesWorth.toFixed(1), '2.1');
    assert.equal(estimate.device.capacityBytes, 80e9);
  });

  it('gives 508.6 GB without FlashAttention and 6.5 TB of states for the 405B', () => {
    const noFlash = core.estimateMemory(plateSetup({ flashAttention: false }));
    assert.equal(core.formatBytes(noFlash.bytes.totalBytes, 1), '508.6 GB');
    const big = core.estimateMemory(plateSetup({ modelId: 'llama3-405b' }));
    assert.equal(core.formatBytes(big.bytes.modelStatesBytes, 1), '6.5 TB');
    assert.equal(big.devicesWorth.toFixed(0), '88');
  });

  it('returns the workshop view in one call: the estimate and a plain-array curve', () => {
    const view = core.workshopView(plateSetup({ microBatchSequences: 4 }), 16);
    assert.ok(Array.isArray(view.activationCurve));
    assert.equal(view.activationCurve.length, 16);
    assert.equal(view.activationCurve[3].flashAttentionBytes, view.estimate.bytes.activationsBytes);
    assert.equal(view.activationCurve[0].withoutFlashAttentionBytes, 354 * 8192 * 4096 * 32);
  });

  it("carries every setting's text with the view, as settingText writes each", () => {
    const setup = plateSetup({ microBatchSequences: 2, recompute: 'selective' });
    const view = core.workshopView(setup, 16);
    const ids = core.settings().map((setting) => setting.id);
    assert.deepEqual(Object.keys(view.settingTexts), ids);
    for (const id of ids) assert.equal(view.settingTexts[id], core.settingText(setup, id), id);
    assert.equal(view.settingTexts.tokens, '16384');
    assert.equal(view.settingTexts.recompute, 'selective');
  });

  it("gives the table of terms, and each estimate's bytes by the table's keys", () => {
    const terms = core.terms();
    assert.deepEqual(
      terms.slice(0, 5).map((term) => term.id),
      ['weights', 'gradients', 'masterWeights', 'optimizerStates', 'activations'],
    );
    const estimate = core.estimateMemory(
      plateSetup({ stack: 'deepspeed', layout: { ...plateSetup().layout, dataParallel: 2, zeroStage: 3 } }),
    );
    assert.equal(estimate.answer.status, core.Status.OK, estimate.answer.message);
    const onDevice = terms.filter((term) => term.onDevice);
    assert.deepEqual(Object.keys(estimate.bytes), [
      ...onDevice.map((term) => term.apiKey),
      'modelStatesBytes',
      'totalBytes',
    ]);
    const sum = onDevice.reduce((total, term) => total + estimate.bytes[term.apiKey], 0);
    assert.equal(sum, estimate.bytes.totalBytes);
    assert.deepEqual(Object.keys(estimate.host), [
      ...terms.filter((term) => term.onHost).map((term) => term.apiKey),
      'totalBytes',
    ]);
  });

  it('refuses a choice it does not know as the setup crosses into the core', () => {
    assert.throws(
      () => core.estimateMemory(plateSetup({ recompute: 'sometimes' })),
      /'sometimes' is not one of none, selective, full/,
    );
  });

  it('refuses an unknown model with a message, never a NaN', () => {
    const estimate = core.estimateMemory(plateSetup({ modelId: 'llama3-7b' }));
    assert.equal(estimate.answer.status, core.Status.INVALID_INPUT);
    assert.match(estimate.answer.message, /^Model 'llama3-7b' is not known/);
    assert.equal(estimate.bytes.totalBytes, 0);
  });

  it('checks typed tokens: whole multiples of 8,192 from one to 16 sequences', () => {
    assert.equal(core.microBatchFromTokens(32768, 8192, 16).microBatchSequences, 4);
    for (const bad of [0, -8192, 1000, Number.NaN, Infinity, 1e400, 8192 * 17]) {
      const result = core.microBatchFromTokens(bad, 8192, 16);
      assert.equal(result.answer.status, core.Status.INVALID_INPUT, `tokens ${bad}`);
      assert.equal(
        result.answer.message,
        'Tokens per micro-batch must be a whole multiple of 8,192 (one sequence), from 8,192 to 131,072.',
      );
    }
  });
});

describe('the trainmem-full WebAssembly module', () => {
  let json;
  before(async () => {
    json = await require('../../build-wasm/trainmem-full.js')({
      wasmBinary: readFileSync('build-wasm/trainmem-full.wasm'),
    });
  });

  it('reads a config.json into a shape the estimator takes', () => {
    const parsed = json.parseHfConfig(
      JSON.stringify({
        hidden_size: 4096,
        num_hidden_layers: 32,
        num_attention_heads: 32,
        num_key_value_heads: 8,
        intermediate_size: 14336,
        vocab_size: 128256,
      }),
      false,
    );
    assert.equal(parsed.answer.status, json.Status.OK);
    const estimate = core.estimateMemory({
      ...core.defaultSetup(),
      modelId: 'custom',
      customModel: parsed.shape,
    });
    assert.equal(estimate.numParameters, 8030261248);
  });

  it("carries today's shapes through JavaScript whole: gpt-oss's sinks and biased experts", () => {
    const parsed = json.parseHfConfig(
      JSON.stringify({
        model_type: 'gpt_oss',
        hidden_size: 2880,
        intermediate_size: 2880,
        num_hidden_layers: 24,
        num_attention_heads: 64,
        num_key_value_heads: 8,
        head_dim: 64,
        num_local_experts: 32,
        num_experts_per_tok: 4,
        vocab_size: 201088,
      }),
      false,
    );
    assert.equal(parsed.answer.status, json.Status.OK);
    assert.equal(parsed.shape.attentionSinks, true);
    const estimate = core.estimateMemory({
      ...core.defaultSetup(),
      modelId: 'custom',
      customModel: parsed.shape,
    });
    assert.equal(estimate.numParameters, 20914757184); // openai/gpt-oss-20b: 20.91B
  });

  it("reads a multimodal config's text tower when asked, and gives it as a config of its own", () => {
    const gemma3 = JSON.stringify({
      model_type: 'gemma3',
      _name_or_path: 'google/gemma-3-4b-pt',
      text_config: {
        model_type: 'gemma3_text',
        hidden_size: 2560,
        intermediate_size: 10240,
        num_hidden_layers: 34,
      },
      vision_config: { model_type: 'siglip_vision_model' },
    });
    // Its vision tower is counted when described; this one leaves out what SigLIP needs.
    assert.match(
      json.parseHfConfig(gemma3, false).answer.message,
      /^config\.json: in the vision tower \(vision_config\): 'hidden_size' is missing/,
    );
    const tower = json.textTowerConfig(gemma3);
    assert.equal(tower.answer.status, json.Status.OK);
    const parsed = json.parseHfConfig(tower.text, false);
    assert.equal(parsed.shape.name, 'google/gemma-3-4b-pt (text tower)');
    const estimate = core.estimateMemory({
      ...core.defaultSetup(),
      modelId: 'custom',
      customModel: parsed.shape,
    });
    assert.equal(estimate.numParameters, 3880263168); // 4,300,079,472 less SigLIP and the projector
  });

  it('refuses a hostile config.json with a message naming the field', () => {
    const wrongType = json.parseHfConfig('{"hidden_size": "4096"}', false);
    assert.equal(wrongType.answer.status, json.Status.INVALID_INPUT);
    assert.match(wrongType.answer.message, /^config\.json: 'hidden_size'/);
    const deep = json.parseHfConfig('['.repeat(100000), false);
    assert.equal(deep.answer.status, json.Status.INVALID_INPUT);
    const proto = json.parseHfConfig('{"__proto__": {"polluted": 1}}', false);
    assert.equal(proto.answer.status, json.Status.INVALID_INPUT);
  });

  it("gives the figures the estimator gives, though only it leaves out the arithmetic's words", () => {
    // trainmem.wasm is built without the words each step writes when asked (text/figure.hpp);
    // the on-demand module with them. Every figure must be the same.
    const setups = [
      core.defaultSetup(),
      plateSetup({ flashAttention: false, logits: true, loss: 'fp32-upcast' }),
      plateSetup({
        loraRank: 16,
        loraTargets: 'all-linear',
        baseWeights: 'nf4',
        offload: 'optimizer',
        offloadActivations: true,
      }),
      plateSetup({ precision: 'fp8-mixed', deviceId: 'b200', activationModel: 'llama-block' }),
      plateSetup({
        modelId: 'mixtral-8x7b',
        layout: { ...plateSetup().layout, dataParallel: 8, expertParallel: 8, zeroStage: 1 },
      }),
      plateSetup({
        stack: 'torchtitan',
        recompute: 'selective-op',
        logits: true,
        loss: 'fp32-upcast',
        layout: { ...plateSetup().layout, dataParallel: 8, zeroStage: 2 },
      }),
      plateSetup({
        modelId: 'llama3-70b',
        logits: true,
        recompute: 'full',
        layout: {
          ...plateSetup().layout,
          dataParallel: 4,
          zeroStage: 1,
          tensorParallel: 8,
          sequenceParallel: true,
          pipelineParallel: 4,
          virtualPipelineStages: 2,
        },
      }),
    ];
    const terms = core.terms();
    for (const setup of setups) {
      const lean = core.estimateMemory(setup);
      assert.equal(lean.answer.status, core.Status.OK, lean.answer.message);
      const written = JSON.parse(json.setupToJson(setup));
      for (const term of terms.filter((each) => each.onDevice)) {
        assert.equal(lean.bytes[term.apiKey], written.bytes[term.id], `${term.id}`);
      }
      assert.equal(lean.bytes.totalBytes, written.bytes.total);
      assert.equal(lean.host.totalBytes, written.host.total);
      assert.equal(lean.peakReservedBytes, written.peakReservedBytes);
    }
  });

  it("writes the CLI's JSON and a CSV for a setup", () => {
    const written = JSON.parse(json.setupToJson(core.defaultSetup()));
    assert.equal(written.bytes.total, 164991401984);
    assert.match(
      json.setupToCsv(core.defaultSetup()),
      /^term,bytes_per_parameter,bytes\n[\s\S]*\ntotal,16,164991401984\n$/,
    );
  });
});

describe('the WebAssembly modules: the Llama block and the measured cases', () => {
  before(async () => {
    core ??= await createTrainmemModule({ wasmBinary: readFileSync('build-wasm/trainmem-full.wasm') });
  });

  it('lists the saved tensors of one layer, 139,400 bytes per token for Llama 3 8B', async () => {
    // The saved tensors are an exploration view: in the on-demand module, with the estimator's
    // Llama-block arithmetic that the estimate below also counts with.
    const json = await require('../../build-wasm/trainmem-full.js')({
      wasmBinary: readFileSync('build-wasm/trainmem-full.wasm'),
    });
    const { tensors, bytesPerToken } = json.savedTensors(plateSetup({ activationModel: 'llama-block' }));
    assert.equal(tensors.length, 14);
    assert.equal(bytesPerToken, 139400);
    assert.deepEqual(json.savedTensors(plateSetup({ sequenceLength: 0 })), {
      inUse: false,
      caption: '',
      tensors: [],
      bytesPerToken: 0,
    });
    const estimate = core.estimateMemory(plateSetup({ activationModel: 'llama-block' }));
    assert.equal(estimate.bytes.activationsBytes, 32 * 8192 * 139400);
  });

  it('says in notes what Megatron-LM does to a setup before it runs it, and none elsewhere', () => {
    const megatron = plateSetup({
      stack: 'megatron',
      eodToken: true,
      layout: { ...core.defaultSetup().layout, tensorParallel: 8, sequenceParallel: true },
    });
    const padded = core.estimateMemory(megatron);
    assert.deepEqual(padded.notes, [
      "Megatron-LM pads the vocabulary of 128,256 and the NullTokenizer's end-of-document token to " +
        '129,024 rows, a multiple of 128 × tensor parallelism 8 (--make-vocab-size-divisible-by): ' +
        '6,291,456 parameters more in the embedding and output layer, and 768 more logits per token.',
    ]);
    assert.deepEqual(core.estimateMemory(plateSetup()).notes, []);
  });

  it('counts an unfused FP32-upcast loss at 12 bytes per logit', () => {
    const logits = 8192 * 128256;
    const fused = core.estimateMemory(plateSetup({ logits: true }));
    const upcast = core.estimateMemory(plateSetup({ logits: true, loss: 'fp32-upcast' }));
    assert.equal(fused.bytes.logitsBytes, 6 * logits);
    assert.equal(upcast.bytes.logitsBytes, 12 * logits);
    assert.deepEqual(
      core
        .settings()
        .find((setting) => setting.id === 'loss')
        .choices.map((choice) => choice.id),
      [
        'vocab-parallel',
        'fp32-upcast',
        'native-fused',
        'te-fused',
        'chunked',
        'fused-linear',
        'fp32-shifted',
        'chunked-nll',
        'cut-cross-entropy',
        'chunked-wrapper',
        'grpo',
        'dpo',
      ],
    );
  });

  it("lists the core's devices with the source of each one's memory, and estimates on them", () => {
    const devices = core.settings().find((setting) => setting.id === 'device').choices;
    assert.deepEqual(
      devices.map((choice) => choice.id),
      [
        'h100',
        'h100-96gb',
        'h200',
        'h20',
        'b200',
        'gb200',
        'b300',
        'a100-40gb',
        'a100-80gb',
        'mi300x',
        'mi325x',
        'l40s',
        'l4',
        'a10g',
        'rtx-4090',
        'rtx-5090',
        'custom',
      ],
    );
    assert.deepEqual(
      devices.find((choice) => choice.id === 'mi325x'),
      { id: 'mi325x', name: 'MI325X 256 GB', source: 'AMD Instinct MI325X data sheet: 256 GB HBM3E' },
    );
    assert.equal(new Set(devices.map((choice) => choice.source)).size, devices.length);
    const l40s = core.estimateMemory(plateSetup({ deviceId: 'l40s' }));
    assert.equal(l40s.device.capacityBytes, 48e9);
    assert.equal(l40s.devicesWorth, l40s.bytes.totalBytes / 48e9);
  });

  it('sets every measured case against both activation models, in words (trainmem-full)', async () => {
    const json = await require('../../build-wasm/trainmem-full.js')({
      wasmBinary: readFileSync('build-wasm/trainmem-full.wasm'),
    });
    const rows = json.compareMeasured();
    // Our thirty-one (four of them GRPO's loss, four DPO's), then torchao's three B200 runs and torchtitan's four GB200 runs, then
    // SimuMax's 19 Megatron-LM runs, each allocated and reserved, then torchtune's seven flags rows
    // and its 70B LoRA run on eight A100s, then fms-acceleration's eleven Hugging Face rows, then
    // our ten H200 Trainer runs, then Liger-Kernel's example's two.
    assert.equal(rows.length, 31 + 3 + 4 + 2 * 19 + 7 + 1 + 11 + 10 + 2);
    const megatron = rows.find(
      (row) => row.id === 'simumax-b200-llama3_70b_l12_tp8_pp1_dp1_mbc4_cef-allocated',
    );
    assert.equal(megatron.measured, '28.3 GiB');
    assert.equal(megatron.quantity, 'allocated');
    assert.deepEqual(
      [megatron.otherEstimateName, megatron.otherEstimate, megatron.otherEstimateError],
      ['SimuMax v1.2', '28.2 GiB', '−0.4%'],
    );
    const standing = json.measuredStanding();
    assert.equal(standing.length, 2);
    assert.match(standing[1], /^Reserved, 19 runs: trainmem's median error/);
    const tiny = rows.find((row) => row.id === 'harness-cpu-tiny-kernels-4x4');
    assert.deepEqual(
      [tiny.measured, tiny.korthikanti, tiny.korthikantiError, tiny.llamaBlock, tiny.llamaBlockError],
      ['6,963,232 B', '9,699,328 B', '+39.3%', '6,963,200 B', '±0.0%'],
    );
    for (const row of rows) {
      assert.ok(row.ok, row.id);
      // Another tool's estimate only where its table published one, and never "undefined".
      assert.equal(row.otherEstimateName === '', !row.id.startsWith('simumax-b200-'), row.id);
      assert.ok(Number.isFinite(row.llamaBlockErrorPercent), row.id);
    }
  });

  it('reads every setting from text as the CLI does, and refuses what its table refuses', () => {
    const settings = core.settings();
    // Each setting once, by an id that is a flag and a URL key, and each field of the API's setup
    // a setting's: the bindings carry the setup by the table alone.
    const ids = settings.map((setting) => setting.id);
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids) assert.match(id, /^[a-z0-9]+(-[a-z0-9]+)*$/);
    const fields = Object.entries(core.defaultSetup()).flatMap(([key, value]) =>
      key === 'layout' ? Object.keys(value).map((inner) => `layout.${inner}`) : [key],
    );
    assert.deepEqual(
      fields.filter((field) => field !== 'customModel').sort(),
      settings
        .filter((setting) => setting.apiKey)
        .map((setting) => setting.apiKey)
        .sort(),
    );
    const plate = core.defaultSetup();
    for (const setting of settings) {
      assert.equal(core.settingText(plate, setting.id), setting.defaultText, setting.id);
    }
    const changed = core.changeSetting(plate, 'recompute', 'selective', 16);
    assert.equal(changed.answer.status, core.Status.OK);
    assert.equal(changed.setup.recompute, 'selective');
    const refused = core.changeSetting(plate, 'tp', '0', 16);
    assert.equal(refused.answer.setting, 'tp');
    assert.equal(refused.answer.message, 'Tensor parallelism must be a whole number from 1 to 65,536.');
    assert.equal(refused.setup.layout.tensorParallel, 1);
    assert.equal(core.checkChoice('model', core.customModelId).status, core.Status.OK);
    assert.equal(core.checkChoice('optimizer', 'lion').setting, 'optimizer');
  });
});
