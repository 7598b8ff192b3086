// Any model: a config.json pasted, dropped or chosen, read by the core (trainmem-full.js, loaded
// when first asked). Its minified text is kept in the store, so that links carry it.
import { $, takeFiles } from '../dom.js';

export function createConfigPanel({ estimator, store, render, showError, loadFullTools }) {
  const configText = $(estimator.configInputId);

  const textTower = $('config-text-tower');

  async function useConfig(given) {
    try {
      const tools = await loadFullTools();
      let text = given;
      // The text tower alone: the core gives it as a config.json of its own, which links carry.
      if (textTower.checked) {
        const tower = tools.textTowerConfig(given);
        if (!tower.ok) {
          showError(estimator.configInputId, tower.message);
          return;
        }
        text = tower.text;
      }
      const parsed = tools.parseConfig(text);
      if (!parsed.ok) {
        showError(estimator.configInputId, parsed.message);
        return;
      }
      render(
        { ...store.get().setup, modelId: estimator.customModelId, customModel: parsed.shape },
        // Whitespace outside strings dropped: JSON.parse would refuse the bare NaN and Infinity
        // that the core reads as Python's json does.
        { configText: text.replace(/("(?:[^"\\]|\\.)*")|\s+/g, (_, string) => string ?? ''), reveal: true },
      );
    } catch (error) {
      showError(estimator.configInputId, `The config reader could not load (${error.message}).`);
    }
  }

  async function useConfigFile(file) {
    if (!file) return;
    let tools;
    try {
      tools = await loadFullTools();
    } catch (error) {
      showError(estimator.configInputId, `The config reader could not load (${error.message}).`);
      return;
    }
    if (file.size > tools.maxConfigBytes) {
      showError(
        estimator.configInputId,
        `config.json: the file is ${estimator.formatCount(file.size)} bytes; at most ${estimator.formatCount(tools.maxConfigBytes)} are read.`,
      );
      return;
    }
    const text = await file.text();
    configText.value = text;
    useConfig(text);
  }

  $('use-config').addEventListener('click', () => useConfig(configText.value));
  takeFiles(configText, $('config-file'), useConfigFile);

  return {
    element: null,
    update() {},
    /** Reads a config.json that a link carried. */
    open(text) {
      configText.value = text;
      textTower.checked = false; // a link carries a text tower as a config of its own
      useConfig(text);
    },
  };
}
