// Will my run fit? A run's launch config (torchtitan's TOML job config, Megatron-LM's launch line,
// DeepSpeed's JSON config, axolotl's or TRL's YAML config), pasted, dropped or chosen, read by the core (trainmem-full.js, loaded when first asked): its settings become the
// workshop's, each said in words, and the verdict (fits, uncertain, does not fit, from the spread
// of the estimate's errors against the stack's published runs) follows the workshop's setup from
// then on.
import { $, onOpen, takeFiles } from '../dom.js';

/** How long after a slider's last move the verdict, a second estimate, is worked out again. */
const VERDICT_DELAY_MS = 150;

export function createLaunchPanel({
  estimator,
  store,
  render,
  showError,
  showNotice,
  choices,
  loadFullTools,
  loadYamlTools,
}) {
  const panel = $('launch-panel');
  const text = $('launch');
  const worldSize = $('launch-world-size');
  const result = $('launch-result');
  let tools = null;
  let opened = null; // the launch config read: {kind, notes, notUnderstood}
  let pending = 0; // the timer of a verdict put off while a slider moves

  /** The settings whose text differs between two setups, each as "Name: text". */
  const changes = (before, after) =>
    choices.differences(before, after).map(({ name, now }) => `${name}: ${now}`);

  /** What Read gives, a refusal or the result, brought into view and focused, where the reader looks next. */
  function reveal(element) {
    element.tabIndex = -1;
    element.scrollIntoView({ block: 'nearest' });
    element.focus({ preventScroll: true });
  }

  function refuse(message) {
    showError('launch', message);
    reveal($('launch-error'));
  }

  async function useLaunch(given) {
    let yamlToJson;
    try {
      [tools, yamlToJson] = await Promise.all([loadFullTools(), loadYamlTools()]);
    } catch (error) {
      refuse(`The launch-config reader could not load (${error.message}).`);
      return;
    }
    const typed = worldSize.value.trim().replaceAll(',', '');
    const world = typed === '' ? 0 : Number(typed);
    if (!Number.isInteger(world) || world < 0 || world > 1_000_000) {
      refuse('The world size must be a whole number of devices up to 1,000,000, or left empty.');
      return;
    }
    const before = store.get().setup;
    const read = tools.readLaunch(given, before, world, yamlToJson);
    if (!read.ok) {
      refuse(read.message);
      return;
    }
    // The file's settings are the reader's now: nothing held pending for them applies over it.
    // What it leaves (the device and the headroom; a DeepSpeed config's model and tokens) stays
    // as the reader has it.
    const leaves = new Set(read.leaves);
    for (const setting of estimator.settings) {
      if (!leaves.has(setting.id)) choices.touch(setting.id);
    }
    const said = render(read.setup, {
      refusedAt: { field: 'launch', prefix: "The file's setup is refused as the workshop would run it: " },
    });
    if (said === null) {
      // Refused by the core: the last good view stays, and says why.
      reveal($('launch-error'));
      return;
    }
    const changed = changes(before, store.get().setup);
    showNotice(
      [
        changed.length > 0
          ? `Read from the launch config: ${changed.join('; ')}.`
          : 'The launch config sets what the workshop already shows.',
        ...said,
      ].join(' '),
    );
    opened = read;
    $('launch-read').textContent = [
      `Read as ${/^[aeiou]/i.test(read.kind) ? 'an' : 'a'} ${read.kind}.`,
      ...read.notes,
      'The device and the headroom stay as you set them.',
    ].join(' ');
    const unknown = $('launch-unknown');
    unknown.hidden = read.notUnderstood.length === 0;
    unknown.textContent =
      `Set in the file and not understood, so left out of the estimate, and no verdict while ` +
      `they stay: ${read.notUnderstood.join(', ')}.`;
    result.hidden = false;
    update(store.get());
    reveal(result);
  }

  /**
   * The verdict on the workshop's setup, under a training stack (beside the readout) and once a
   * launch config is open (in its panel); while a slider moves, once it rests.
   */
  function update(state, how = {}) {
    clearTimeout(pending);
    // Without a file, the verdict beside the readout waits for the setup to rest: its first answer
    // sets every published run against the estimate (a fifth of a second), which a reader's change
    // of control should not wait for.
    if (how.dragging || opened === null) {
      pending = setTimeout(() => showVerdict(store.get()), VERDICT_DELAY_MS);
      return;
    }
    showVerdict(state);
  }

  /**
   * Under a stack with its published runs, the verdict beside the readout, as the CLI ends every
   * estimate with it: from the settings as from a file (whose keys not understood withhold it).
   */
  function showStackVerdict(state, verdict) {
    const line = $('stack-verdict');
    const shown = verdict !== null && state.setup.stack !== estimator.defaultSetup.stack;
    line.hidden = !shown;
    if (!shown) return;
    const words = verdict.verdict.charAt(0).toUpperCase() + verdict.verdict.slice(1);
    line.dataset.verdict = verdict.verdict;
    line.textContent = `Verdict: ${words}. ${verdict.reason}`;
  }

  function showVerdict(state) {
    if (!state.view.ok) return;
    if (tools === null) {
      // The full module is in place under Go further: its tools answer at once.
      if (state.setup.stack === estimator.defaultSetup.stack) {
        showStackVerdict(state, null);
        return;
      }
      loadFullTools()
        .then((loaded) => {
          tools = loaded;
          showVerdict(store.get());
        })
        .catch(() => showStackVerdict(state, null));
      return;
    }
    const verdict = tools.verdict(state.setup, opened?.notUnderstood ?? []);
    showStackVerdict(state, verdict.ok ? verdict : null);
    if (opened === null) return;
    if (!verdict.ok) return;
    const words = verdict.verdict.charAt(0).toUpperCase() + verdict.verdict.slice(1);
    const line = $('launch-verdict');
    line.dataset.verdict = verdict.verdict;
    line.replaceChildren(
      Object.assign(document.createElement('strong'), { textContent: `${words}.` }),
      ` ${verdict.reason}`,
    );
    $('launch-band').replaceChildren(
      ...verdict.band.map(({ title, error }) => {
        const row = document.createElement('tr');
        const run = Object.assign(document.createElement('th'), { scope: 'row', textContent: title });
        row.append(run, Object.assign(document.createElement('td'), { textContent: error }));
        return row;
      }),
    );
    $('launch-band').closest('details').hidden = verdict.band.length === 0;
  }

  async function useFile(file) {
    if (!file) return;
    if (file.size > 1 << 20) {
      showError(
        'launch',
        `The file is ${estimator.formatCount(file.size)} bytes; at most 1,048,576 are read.`,
      );
      return;
    }
    const given = await file.text();
    text.value = given;
    useLaunch(given);
  }

  $('use-launch').addEventListener('click', () => useLaunch(text.value));
  takeFiles(text, $('launch-file'), useFile);
  // The reader is about to paste: the reader's module starts loading.
  onOpen(panel, () => {
    loadFullTools().catch(() => {});
    loadYamlTools().catch(() => {});
  });

  return { update };
}
