// What the build makes of the core's table of settings (cpp/src/settings/settings.cpp), so that
// no setting is written again beside it: each setting's control on the page, in the fieldset of
// "Go further" its row names, and the JavaScript API's TrainingSetup type. The table comes from the
// core itself, under Node (build-web.mjs).

/** The attribute value `text` as HTML writes it. */
const attribute = (text) => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;');

/**
 * One setting's control as HTML: a checkbox for a switch, a menu for a choice (filled from its
 * choices when the page starts) or for a whole number with words for each value, and a text field
 * for any other number; its label and hint (the row's HTML), and the box its messages go to.
 */
export function controlHtml(setting, kinds) {
  const { id } = setting;
  const label = setting.label || setting.name;
  const hint = setting.hint ? `<p class="hint" id="${id}-hint">${setting.hint}</p>` : '';
  const described = `aria-describedby="${setting.hint ? `${id}-hint ` : ''}${id}-error"`;
  const error = `<p class="error" id="${id}-error" role="alert" hidden></p>`;
  const labelled = `<label for="${id}">${label}</label>`;
  if (setting.kind === kinds.SWITCH) {
    return (
      `<div class="control control-check"><input type="checkbox" id="${id}" name="${id}" ${described} />` +
      `${labelled}${hint}${error}</div>`
    );
  }
  let field;
  if (setting.kind === kinds.CHOICE) {
    field = `<select id="${id}" name="${id}" ${described}></select>`;
  } else if (setting.valueWords.length > 0) {
    const options = setting.valueWords.map(
      (words, index) => `<option value="${setting.min + index}">${attribute(words)}</option>`,
    );
    field = `<select id="${id}" name="${id}" ${described}>${options.join('')}</select>`;
  } else {
    const mode = setting.kind === kinds.WHOLE ? 'numeric' : 'decimal';
    field = `<input type="text" id="${id}" name="${id}" inputmode="${mode}" autocomplete="off" ${described} />`;
  }
  return `<div class="control">${labelled}${field}${hint}${error}</div>`;
}

/**
 * `html` with every setting whose row names a section put in that section's fieldset
 * (`<fieldset data-section="…">`), after what the page writes there by hand, in the table's order.
 * Throws where a section has no fieldset, or a fieldset no setting, so that a renamed section fails
 * the build rather than losing its controls.
 */
export function withSettingControls(html, settings, kinds) {
  const bySection = new Map();
  for (const setting of settings.filter((setting) => setting.section)) {
    if (!bySection.has(setting.section)) bySection.set(setting.section, []);
    bySection.get(setting.section).push(controlHtml(setting, kinds));
  }
  let page = html;
  for (const [section, controls] of bySection) {
    const fieldset = new RegExp(`(<fieldset data-section="${section}"[^>]*>[\\s\\S]*?)(</fieldset>)`);
    if (!fieldset.test(page))
      throw new Error(`build: index.html has no fieldset for the section "${section}"`);
    page = page.replace(fieldset, (_, before, close) => `${before}${controls.join('\n')}\n${close}`);
  }
  for (const [, section] of page.matchAll(/<fieldset data-section="([^"]*)"/g)) {
    if (!bySection.has(section)) throw new Error(`build: no setting's row names the section "${section}"`);
  }
  return page;
}

/** A setting's value as TypeScript types it: a choice's ids, a number or a boolean. */
function typeOf(setting, kinds) {
  if (setting.kind === kinds.SWITCH) return 'boolean';
  if (setting.kind !== kinds.CHOICE) return 'number';
  if (setting.heldAsId) return 'string';
  return setting.choices.map((choice) => `'${choice.id}'`).join(' | ');
}

/**
 * The API's ParallelLayout and TrainingSetup, each field at its setting's api key with the
 * setting's help as its comment, in the table's order; the custom model beside them.
 */
export function setupTypes(settings, kinds) {
  const fields = { '': [], layout: [] };
  for (const setting of settings.filter((setting) => setting.apiKey)) {
    const [outer, inner] = setting.apiKey.split('.');
    const later = setting.defaultedInApi ? ' Optional in a setup: its default where left out.' : '';
    const line = `      /** ${setting.help.replace(/\*\//g, '* /')}.${later} */\n      ${inner ?? outer}: ${typeOf(setting, kinds)};`;
    (inner === undefined ? fields[''] : fields[outer]).push(line);
  }
  return (
    `    /** How the model is spread over devices: the layout's settings (--dp, --tp, …). */\n` +
    `    type ParallelLayout = {\n${fields.layout.join('\n')}\n    };\n\n` +
    `    /** What to estimate, a field for each setting of the core's table; \`defaultSetup\` has every field. Choices are their ids. */\n` +
    `    type TrainingSetup = {\n${fields[''].join('\n')}\n      layout: ParallelLayout;\n      /** A model read from a config.json, estimated when modelId is the custom model's id. */\n      customModel: ModelShape;\n    };\n`
  );
}

/** The declaration's text with the setup's types written in at its marker line. */
export function withSetupTypes(declaration, settings, kinds) {
  const marker = '    // The setup types: written here by the build, from the core’s table of settings.\n';
  if (declaration.split(marker).length !== 2) {
    throw new Error('build: web/trainmem-api.d.ts needs the one marker line for the setup types');
  }
  return declaration.replace(marker, () => setupTypes(settings, kinds));
}
