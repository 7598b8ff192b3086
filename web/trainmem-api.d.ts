// The JavaScript entry point's types (trainmem-api.js; docs/api.md says what each member does).
// Written into dist/ beside trainmem-api.js for other plates, with the setup's types made from the
// core's table of settings at the marker line (scripts/settings-page.mjs). tests/node/api-types.test.mjs
// type-checks web/api-example.js against the written one (dist/trainmem-api.d.ts), and the
// estimator's real answers, field by field, so that a member or a field renamed in the page's
// estimator (web/src/estimator.js) or in the bindings, and not here, fails the tests.
export {};

declare global {
  interface Window {
    trainmem: {
      /** Loads the WebAssembly estimator once; later calls share the same promise. */
      load(): Promise<Trainmem.Api>;
    };
  }

  namespace Trainmem {
    type Choice = { id: string; name: string; source: string };

    /** A model's shape: a preset, or read from a config.json (customModel). */
    type ModelShape = {
      id: string;
      name: string;
      source: string;
      numLayers: number;
      hiddenSize: number;
      ffnHiddenSize: number;
      numAttentionHeads: number;
      numKeyValueHeads: number;
      vocabSize: number;
      tiedEmbeddings: boolean;
      headDim: number;
      attentionQkvBias: boolean;
      attentionOutputBias: boolean;
      mlpBias: boolean;
      normsPerLayer: number;
      numExperts: number;
      numExpertsPerToken: number;
      gatedMlp: boolean;
      normBias: boolean;
      numPositionEmbeddings: number;
      /** The longest sequence: learned positions, or a rotary model's max_position_embeddings; 0 unknown. */
      maxPositions: number;
      outputHeadBias: boolean;
      parallelAttentionMlp: boolean;
      moeFfnHiddenSize: number;
      moeLatentSize: number;
      sharedExpertFfnHiddenSize: number;
      sharedExpertGate: boolean;
      routerBias: boolean;
      numDenseLayers: number;
      /** Past the first numDenseLayers, layer i is a mixture when i + 1 is a multiple of this (Llama 4). */
      moeLayerStep: number;
      qkNorm: boolean;
      /** OLMo 2's q/k norms over the whole projections. */
      qkNormWhole: boolean;
      /** gpt-oss's learned sink logit per head. */
      attentionSinks: boolean;
      /** gpt-oss's experts' SwiGLU over clamped gate and up halves. */
      clampedSwiglu: boolean;
      /** Multi-token-prediction modules the checkpoint adds (num_nextn_predict_layers). */
      numMtpLayers: number;
      qLoraRank: number;
      kvLoraRank: number;
      qkNopeHeadDim: number;
      qkRopeHeadDim: number;
      vHeadDim: number;
      /** Hybrids (Qwen3-Next, Qwen3.5, LFM2, Kimi Linear, Nemotron-H): one character a layer, 'A' full attention, 'L' the linear mixer (each with the MLP), or one part alone: 'a' attention, 'l' the linear mixer, 'F' the MLP; "" when every layer is attention. */
      hybridLayers: string;
      linearNumKeyHeads: number;
      linearNumValueHeads: number;
      linearKeyHeadDim: number;
      linearValueHeadDim: number;
      linearConvKernelDim: number;
      /** LFM2's short convolution (conv_L_cache) as the linear mixer; 0: a Gated DeltaNet. */
      shortConvKernel: number;
      /** LFM2's conv_bias: biases on in_proj, the convolution and out_proj. */
      shortConvBias: boolean;
      /** Gemma 4's full-attention layers ('L'): their head width (global_head_dim; 0 when the second kind is no attention), key/value heads, and whether their values are K's output (attention_k_eq_v). */
      globalHeadDim: number;
      globalKvHeads: number;
      globalKEqV: boolean;
      /** This attention builds no v_proj: its values are K's output. */
      keysAreValues: boolean;
      /** Gemma 4's weightless v_norm over each value head. */
      valueNorm: boolean;
      /** Gemma 4's layer_scalar, one value a layer the checkpoint holds. */
      layerScalar: boolean;
      /** Gemma 2's and 4's final_logit_softcapping (cap·tanh(x / cap) over the logits); 0: none. */
      finalLogitSoftcapping: number;
      /** Qwen3-Next's sigmoid gate on the attention's output (q_proj twice as wide). */
      attentionOutputGate: boolean;
      /** Qwen3-Next repeats the linear layers' q and k to their value heads before fla's kernel. */
      linearQkRepeated: boolean;
      /** Qwen3.5 runs its linear layers' gated norm in PyTorch, not fla's fused kernel. */
      linearNormUnfused: boolean;
      /** Qwen3.5's four linear-layer input projections (Qwen3-Next's two hold the same weights). */
      linearProjectionsSplit: boolean;
      /** Kimi Linear's Kimi Delta Attention as the linear mixer, rather than a Gated DeltaNet. */
      kimiDeltaAttention: boolean;
      /** Nemotron-H's Mamba-2 mixer as the linear mixer (the linear_* key heads and width are its groups and state). */
      mamba2: boolean;
      /** Jamba's Mamba (selective-scan) mixer as the linear mixer (one key head of the state, d channels of width 1). */
      mamba1: boolean;
      /** MiniMax's lightning attention as the linear mixer: its block size; 0 without it. */
      lightningBlockSize: number;
      /** Mamba's dt rank (mamba_dt_rank); 0 without Mamba's mixer. */
      mambaDtRank: number;
      /** Mamba's in_proj and out_proj biases (mamba_proj_bias). */
      mambaProjBias: boolean;
      /** Mamba's and Mamba-2's convolution bias (use_conv_bias, mamba_conv_bias). */
      linearConvBias: boolean;
      /** Mamba-2's chunk_size (NemotronH's, 128 by default), to which vLLM aligns its cached states under prefix caching; 0 without Mamba-2. */
      mambaChunkSize: number;
      /** Whether vLLM keeps the linear mixers' recurrent state in FP32 (Qwen3.5's mamba_ssm_dtype, Nemotron-H's mamba_ssm_cache_dtype); else BF16. */
      recurrentStateFp32: boolean;
      /** DeepSeek Sparse Attention's indexer (DeepSeek-V3.2, GLM-5): its heads, their width, the keys each query keeps; 0 without one. */
      indexNHeads: number;
      indexHeadDim: number;
      indexTopk: number;
      /** The menu's group for a preset ("Llama", "Qwen", …); "" for a config.json. */
      family: string;
      /** A multimodal model's vision tower and projector, counted from its vision_config; 0 for a text model. */
      visionParameters: number;
      /** Whether a config.json set its dropout (a preset states none: dropout "model" then follows each activation model's source). */
      dropoutStated: boolean;
      /** The config's dropout after the attention and the MLP is above 0. */
      residualDropout: boolean;
      /** The config's dropout on the attention probabilities is above 0. */
      probabilityDropout: boolean;
      /** The config's dropout keys and values, as the estimate's note says them. */
      dropoutSaid: string;
    };

    // The setup types: written here by the build, from the core’s table of settings.

    /** The core's own answer, nested in its results: {status, message, setting}. */
    type Answer = { status: unknown; message: string; setting: string };

    /** What the API answers with: `ok`, and when refused the core's message and the field at fault. */
    type Answered = { ok: boolean; status: unknown; message: string; invalidField: string };

    /**
     * An answer with `Fields`: all of them when `ok`. A refused setup has them only where the core
     * itself refused it; one the API's own checks refuse (a missing field, a fraction, an unknown
     * choice) has none: read them after `ok`.
     */
    type Result<Fields> = (Answered & { ok: true } & Fields) | (Answered & { ok: false } & Partial<Fields>);

    /** A row of the core's table of memory terms (cpp/include/trainmem/terms.hpp). */
    type Term = {
      id: string;
      apiKey: string;
      label: string;
      phrase: string;
      part: 'modelState' | 'activations' | 'logits' | 'alongside' | 'inPasses' | 'stack' | 'host';
      onDevice: boolean;
      onHost: boolean;
      listedWhenHeld: boolean;
      countedBy: string;
    };

    /** Bytes by term, at each term's apiKey ("weightsBytes"), with their sums. */
    type Breakdown = {
      weightsBytes: number;
      gradientsBytes: number;
      masterWeightsBytes: number;
      optimizerStatesBytes: number;
      activationsBytes: number;
      totalBytes: number;
      [apiKey: string]: number;
    };

    type Device = { id: string; name: string; shortName: string; capacityBytes: number };

    type BytesPerParameter = {
      weights: number;
      gradients: number;
      masterWeights: number;
      optimizerStates: number;
      total: number;
    };

    type StackTerm = {
      id: string;
      label: string;
      bytes: number;
      source: string;
      inAllocator: boolean;
    };

    type PipelineStage = 'only' | 'first' | 'last' | 'middle';

    /** One pipeline stage's device: its index from 0 (the first), its role, its layers and parameters, its total and peaks. */
    type StageFigures = {
      index: number;
      role: PipelineStage;
      layers: number;
      parameters: number;
      totalBytes: number;
      peakAllocatedBytes: number;
      peakReservedBytes: number;
    };

    type EstimateFields = {
      setup: TrainingSetup;
      modelName: string;
      /** The model's longest sequence: its learned positions or max_position_embeddings; 0 when unknown. */
      maxPositions: number;
      /** The whole model's parameters, its multi-token-prediction modules' with them when trained (`mtp`). */
      numParameters: number;
      /** The model's multi-token-prediction modules' parameters, trained or not; 0 without them. */
      mtpParameters: number;
      /** A multimodal model's vision tower and projector, among numParameters; 0 for a text model. */
      visionParameters: number;
      parametersOnDevice: number;
      trainableParameters: number;
      baseLinearBytesPerParameter: number;
      mostLoadedStage: PipelineStage;
      /** The stage whose device the terms are of (setup.pipelineStage: 0 the most loaded), and the most loaded, on which fits and devicesWorth are judged. */
      stage: StageFigures;
      mostLoaded: StageFigures;
      bytesPerParameter: BytesPerParameter;
      tokensPerMicroBatch: number;
      bytes: Breakdown & { modelStatesBytes: number };
      host: Breakdown;
      /** The devices that share the host (up to 8 of the layout's), what they offload together, the host's memory, and whether it holds it. */
      hostDevices: number;
      hostNodeBytes: number;
      hostCapacityBytes: number;
      hostFits: boolean;
      device: Device;
      numDevices: number;
      /** What a fit is judged against: the printed capacity under the ideal stack; under a training stack, the memory PyTorch reports for the device (total_memory), where known. */
      limitBytes: number;
      devicesWorth: number;
      usableBytes: number;
      fits: boolean;
      /** The share of the capacity kept free, in percent. */
      headroomPercent: number;
      /** What the device holds beside its activations, and of that what is neither model states nor counted logits. */
      heldBytes: number;
      heldBesidesBytes: number;
      /** usableBytes less heldBytes: what is left for activations; negative when nothing is. */
      activationRoomBytes: number;
      peakAllocatedBytes: number;
      peakReservedBytes: number;
      stackTerms: StackTerm[];
      /** What the stack did to the setup before it ran it, a sentence each (Megatron-LM's padded vocabulary). */
      notes: string[];
    };

    /** An estimate as nested in a result (layouts, savings, the workshop's view). */
    type Estimate = EstimateFields & { answer: Answer };

    type ActivationPoint = {
      microBatchSequences: number;
      tokens: number;
      flashAttentionBytes: number;
      withoutFlashAttentionBytes: number;
      /** False where the setup cannot be counted without FlashAttention (DSA's layers); the bytes are then 0. */
      withoutFlashAttentionCounted: boolean;
      /** What the device has left for activations at this many tokens; below 0 where nothing is. */
      roomBytes: number;
    };

    type Setting = {
      id: string;
      name: string;
      kind: unknown;
      min: number;
      max: number;
      choices: Choice[];
      /** A choice held as its id (the model, the device): a setup may hold an id beyond its choices. */
      heldAsId: boolean;
      allowed: string;
      defaultText: string;
      help: string;
      apiKey: string;
      requiresSetting: string;
      /** The values of requiresSetting under which it is used (the stacks that have a framework's switch). */
      requiresValues: string[];
      requiresReason: string;
      excludes: string;
      keeps: string;
      inUrl: boolean;
      chosenByFit: boolean;
      defaultedInApi: boolean;
      /** One the plate's view answers for: the first view's module carries these alone. */
      plate: boolean;
      /** Where the page shows its control: a fieldset of "Go further" (empty: placed by hand, or none). */
      section: string;
      /** The control's label and hint on the page, in HTML (the label is the name where empty). */
      label: string;
      hint: string;
      /** A whole number shown as a menu: each value's words, from min. */
      valueWords: string[];
    };

    type TermArithmetic = { term: string; label: string; formula: string; source: string };

    type SavedTensor = {
      id: string;
      name: string;
      savedBy: string;
      elements: string;
      elementsPerToken: number;
      /** "BF16", "FP32", "FP8", or an index's or mask's: "int32", "bool". */
      dtype: string;
      dtypeBytes: number;
      split: number;
      bytesPerToken: number;
    };

    type TimelinePoint = {
      phase: string;
      layer: number;
      bytes: number;
      reservedBytes: number;
      held: Breakdown;
    };

    type LayoutCost = { score: number; reason: string };

    type FitSearch = Result<{
      layouts: Estimate[];
      costs: LayoutCost[];
      fewestDevices: number;
      hasBestSmaller: boolean;
      bestSmaller: Estimate;
      whyNotFewer: string;
      /** For each layout, the stack's term that outweighs its model states and activations together at the peak (the data loader's whole mask at 131K tokens), or null. */
      outweighing: ({ label: string; bytes: number } | null)[];
    }>;

    type Saving = {
      change: string;
      label: string;
      estimate: Estimate;
      bytesSaved: number;
      devicesAdded: number;
    };

    type FitCell = {
      sequenceLength: number;
      microBatchSequences: number;
      valid: boolean;
      totalBytes: number;
      devicesWorth: number;
      fits: boolean;
    };

    type MeasuredCase = {
      id: string;
      title: string;
      citation: string;
      source: string;
      statistic: string;
      quantity: string;
      measured: string;
      korthikanti: string;
      llamaBlock: string;
      korthikantiError: string;
      llamaBlockError: string;
      korthikantiErrorPercent: number;
      llamaBlockErrorPercent: number;
      /** Another tool's estimate of the same run, published with it ("" where there is none). */
      otherEstimateName: string;
      otherEstimate: string;
      otherEstimateError: string;
      note: string;
      ok: boolean;
      message: string;
    };

    /** What `window.trainmem.load()` resolves to (docs/api.md). */
    type Api = {
      /** Whether it answers every setup (the full module, as window.trainmem.load() gives it). */
      full: boolean;
      defaultSetup: TrainingSetup;
      presets: ModelShape[];
      customModelId: string;
      modelSettingId: string;
      configInputId: string;
      devicesPerNode: number;
      minTokensPerContextShard: number;
      settings: Setting[];
      settingKinds: unknown;
      terms: Term[];
      choices: { [settingId: string]: Choice[] };
      changeSetting(
        setup: TrainingSetup,
        id: string,
        text: string,
        maxMicroBatchSequences?: number,
      ): Result<{ setup: TrainingSetup }>;
      settingText(setup: TrainingSetup, id: string): string;
      workshopView(
        setup: TrainingSetup,
        maxMicroBatchSequences: number,
      ): Result<{
        estimate: Estimate;
        activationCurve: ActivationPoint[];
        settingTexts: { [settingId: string]: string };
        /** Not counted: how much more the logits and loss would add, and under which loss (0 when counted). */
        logitsLeftOut: { bytes: number; loss: string };
        /** The micro-batch's sequences go in steps of this many: 2 under DPO's loss (its pairs), else 1. */
        microBatchStep: number;
      }>;
      /** `setup` with the logits and loss counted as a run computes them (the stack's loss, else FP32 upcast). */
      withLogitsAsRun(setup: TrainingSetup): TrainingSetup;
      /**
       * What the setup's stack brings where the settings `chosen` (ids) were not chosen: its loss
       * and its precision where the setup's are not what it runs, each listed with its new text.
       */
      bringStackDefaults(
        setup: TrainingSetup,
        chosen: string[],
      ): { setup: TrainingSetup; brought: { settingId: string; text: string }[] };
      estimate(setup: TrainingSetup): Result<EstimateFields>;
      microBatchFromTokens(
        tokens: number,
        sequenceLength: number,
        maxMicroBatchSequences: number,
      ): Result<{ microBatchSequences: number }>;
      explain(setup: TrainingSetup): Promise<TermArithmetic[]>;
      savedTensors(setup: TrainingSetup): Promise<{
        inUse: boolean;
        caption: string;
        tensors: SavedTensor[];
        bytesPerToken: number;
      }>;
      measured(): Promise<MeasuredCase[]>;
      measuredStanding(): Promise<string[]>;
      fewestDevices(setup: TrainingSetup, maxLayouts: number): Promise<FitSearch>;
      timeline(setup: TrainingSetup): Promise<{ points: TimelinePoint[]; peakIndex: number }>;
      savings(setup: TrainingSetup): Promise<Result<{ baseline: Estimate; savings: Saving[] }>>;
      fitMap(
        setup: TrainingSetup,
      ): Promise<Result<{ sequenceLengths: number[]; microBatchSequences: number[]; cells: FitCell[] }>>;
      compare(pinned: EstimateFields, current: EstimateFields): string;
      formatBytes(bytes: number, decimals?: number): string;
      formatBytesShort(bytes: number): string;
      /** How `to` bytes stand against `from`: "11.5 GB more", "112.4 GB less" or "the same". */
      formatChange(from: number, to: number): string;
      formatParameters(count: number): string;
      formatCount(count: number): string;
      formatLayout(estimate: EstimateFields): string;
      formatShare(fraction: number): string;
      formatWorth(devicesWorth: number): string;
      formatPercent(percent: number): string;
      parseWholeNumber(text: string): number;
      parseDecimal(text: string): number;
    };
  }
}
