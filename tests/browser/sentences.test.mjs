// Words that never contradict the figures beside them (issue 44): a walk over setups a student and a
// practitioner reach (the plate's view, other models and devices, training stacks, LoRA and QLoRA,
// offloading, launch configs), checking every sentence that adds, compares or says "more"/"less"
// against the numbers on screen: the readout against the numbers behind the charts, the room for
// activations against what the device holds, the stack's peaks against each other, a notice's total
// against the readout's. The same check, given a sentence with one figure altered, goes red.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { startHarness, tableRows } from './harness.mjs';

const UNITS = { GB: 1e9, TB: 1e12 };
const AMOUNT = String.raw`(\d[\d,]*\.\d) ([GT]B)`;

/** "165.0 GB" as bytes, and the most its rounding to one decimal may hide. */
function amount(number, unit) {
  return { bytes: Number(number.replaceAll(',', '')) * UNITS[unit], slack: 0.05 * UNITS[unit] };
}

/** Every amount in `text`, in order. */
const amountsIn = (text) => [...text.matchAll(new RegExp(AMOUNT, 'g'))].map(([, n, u]) => amount(n, u));

/** The first amount after `before` (a regex source) in `text`, or null. */
function amountAfter(text, before) {
  const found = text.match(new RegExp(`${before}${AMOUNT}`));
  return found ? amount(found.at(-2), found.at(-1)) : null;
}

/** The first amount before `after` (a regex source) in `text`, or null. */
function amountBefore(text, after) {
  const found = text.match(new RegExp(`${AMOUNT}${after}`));
  return found ? amount(found[1], found[2]) : null;
}

/** Whether `whole` is the sum of `parts`, each rounded as shown. */
function adds(whole, parts) {
  const sum = parts.reduce((total, part) => total + part.bytes, 0);
  const slack = [whole, ...parts].reduce((total, part) => total + part.slack, 0) + 1;
  return Math.abs(whole.bytes - sum) <= slack;
}

const STATE_ROWS = ['Weights', 'Gradients', 'Master weights', 'Optimiser states'];

/**
 * What is wrong in `sentences` ({readout, host, stack, verdict, note, notice, compare}, each a sentence or '',
 * and plateRecipe and noRoomCaption, whether the caption's words for the plate's view show) against
 * `rows`, the numbers behind the charts ([term, per parameter, memory]): one line per contradiction.
 */
export function contradictions(sentences, rows) {
  const wrong = [];
  const row = (term) => {
    const found = rows.find(([name]) => name === term);
    return found ? amountsIn(found[2])[0] : null;
  };
  const same = (what, said, shown) => {
    if (!said || !shown || Math.abs(said.bytes - shown.bytes) > Math.max(said.slack, shown.slack) / 10) {
      wrong.push(`${what}: the sentence says ${said?.bytes}, the table ${shown?.bytes}`);
    }
  };
  const { readout, host, stack, note, notice } = sentences;

  // The readout: its total, and each part it names, as the table has them; the parts add up.
  const total = amountAfter(readout, 'needs ');
  same('total', total, row('Total'));
  const states = amountBefore(readout, ' of model states');
  const stateRows = STATE_ROWS.map(row).filter(Boolean);
  if (!states || !adds(states, stateRows))
    wrong.push(`model states: ${states?.bytes} is not the table's four rows`);
  const parts = [states];
  if (/none of its activations at the step's peak/.test(readout)) {
    same('activations at the peak', amount('0.0', 'GB'), row('Activations'));
  } else {
    const activations = amountBefore(readout, ' of activations');
    same('activations', activations, row('Activations'));
    parts.push(activations);
  }
  const logits = amountBefore(readout, ' of logits and loss');
  if (logits) {
    same('logits', logits, row('Logits and loss'));
    parts.push(logits);
  } else if (row('Logits and loss')) {
    wrong.push('the table counts logits the readout does not');
  }
  const uncounted = readout.match(
    new RegExp(`Not counted: the output layer's logits and loss, ${AMOUNT} (more|less)`),
  );
  if (uncounted && uncounted[3] !== 'more') wrong.push('logits left out are said to be less');
  const dequantised = amountBefore(readout, ' for the layer being dequantised');
  if (dequantised) {
    same('dequantised layer', dequantised, row('Dequantised layer (BF16)'));
    parts.push(dequantised);
  }
  // Beside the passes, what the stack holds at its peak: each part it holds at all, and no part
  // the table holds left unsaid.
  if (/Beside them, at the step's peak: /.test(readout)) {
    for (const [phrase, term] of [
      [" of the stack's own buffers", 'Framework buffers'],
      [' of runtime', 'Runtime'],
      [' that the caching allocator keeps reserved', "Allocator's cache"],
    ]) {
      const said = amountBefore(readout, phrase);
      const shown = row(term);
      if (said) {
        same(term, said, shown);
        parts.push(said);
      } else if (shown && shown.bytes > 0) {
        wrong.push(`${term}: the table holds ${shown.bytes}, the readout says nothing`);
      }
    }
  }
  if (total && parts.every(Boolean) && !adds(total, parts))
    wrong.push('the readout’s parts do not add up to its total');

  // How much of the device: its worth in devices, or the share it uses.
  const worth = readout.match(/That is (\d[\d,]*\.\d) .+?s' worth of memory, at (\d+(?:\.\d+)?) GB each/);
  if (worth && total) {
    const expected = total.bytes / (Number(worth[2]) * 1e9);
    if (
      Math.abs(Number(worth[1].replaceAll(',', '')) - expected) >
      0.05 + total.slack / (Number(worth[2]) * 1e9)
    ) {
      wrong.push(`worth: ${worth[1]} devices, where the total makes ${expected}`);
    }
  }
  const using = readout.match(/one .+? (\d+) GB with 10% kept free, using (\d+)% of its memory/);
  if (using && total) {
    const expected = (100 * total.bytes) / (Number(using[1]) * 1e9);
    if (Math.abs(Number(using[2]) - expected) > 0.5 + (100 * total.slack) / (Number(using[1]) * 1e9)) {
      wrong.push(`share: ${using[2]}%, where the total makes ${expected}%`);
    }
  }

  // The room for activations: what the device holds is the total less its activations, its parts
  // add up to it, and the room is what is usable less it (or it exceeds what is usable).
  const room = note.match(
    new RegExp(
      `of the ${AMOUNT} usable .*?once it holds ${AMOUNT}(?: of model states)?(?: \\((.*?)\\))?: ${AMOUNT}`,
    ),
  );
  const none = note.match(
    new RegExp(
      `^No room for activations: ${AMOUNT}(?: of model states)?(?: \\((.*?)\\))? exceed the ${AMOUNT} usable`,
    ),
  );
  if (room) {
    const [usable, held, left] = [1, 3, 6].map((index) => amount(room[index], room[index + 1]));
    if (!adds(usable, [held, left])) wrong.push('the room is not what is usable less what the device holds');
    if (room[5] && !adds(held, amountsIn(room[5]))) wrong.push('what the device holds is not its parts');
    const activations = row('Activations');
    if (total && activations && !adds(total, [held, activations]))
      wrong.push('what the device holds is not the total less its activations');
  } else if (none) {
    const [held, usable] = [1, 4].map((index) => amount(none[index], none[index + 1]));
    if (held.bytes <= usable.bytes)
      wrong.push('"no room", where what the device holds is within what is usable');
    if (none[3] && !adds(held, amountsIn(none[3]))) wrong.push('what the device holds is not its parts');
  } else {
    wrong.push(`the room for activations is not said: ${note}`);
  }

  // Offloading: the host's memory as the table has it, beside the device's total.
  if (host) {
    const [hostBytes, device] = amountsIn(host);
    same('host memory', hostBytes, row('Host memory (offloaded, and its FP32 gradients)'));
    same("the host's device total", device, total);
  }
  // A stack's peaks: the reserved peak is the allocated one and what the allocator keeps beyond it.
  if (stack) {
    const allocated = amountAfter(stack, 'Peak allocated ');
    const reserved = amountAfter(stack, 'peak reserved ');
    const kept = amountAfter(stack, 'The caching allocator keeps ');
    if (!allocated || !reserved || !kept || !adds(reserved, [allocated, kept])) {
      wrong.push('the reserved peak is not the allocated one and the cache');
    }
    // What it holds at the peak: outside the allocator, the runtime; the rest, its buffers.
    const held = (stack.split('At the peak the stack holds: ')[1] ?? '').split('; ');
    const outside = held.filter((part) => part.includes('(outside the allocator)'));
    const inside = held.filter((part) => part !== '' && !outside.includes(part));
    // A part the readout leaves unsaid is none: 0 B.
    const buffers = amountBefore(readout, " of the stack's own buffers") ?? amount('0.0', 'GB');
    const runtime = amountBefore(readout, ' of runtime') ?? amount('0.0', 'GB');
    if (/Beside them, at the step's peak: /.test(readout)) {
      if (!adds(buffers, inside.flatMap(amountsIn))) wrong.push("the stack's parts are not its buffers");
      if (!adds(runtime, outside.flatMap(amountsIn)))
        wrong.push('the parts outside the allocator are not the runtime');
    }
  }
  // A verdict's words agree with its range and the device: fits below it, does not fit above it.
  const verdict = sentences.verdict.match(/^Verdict: (Fits|Uncertain|Does not fit)\./)?.[1];
  const range = sentences.verdict.match(new RegExp(`likely ${AMOUNT} to ${AMOUNT} against the ${AMOUNT}`));
  if (verdict && range) {
    const [low, high, device] = [1, 3, 5].map((index) => amount(range[index], range[index + 1]).bytes);
    const agrees = {
      Fits: high <= device,
      Uncertain: low <= device && device < high,
      'Does not fit': low > device,
    };
    if (low > high || !agrees[verdict]) wrong.push(`"${verdict}" beside ${low} to ${high} against ${device}`);
  }
  // The caption's words for the plate's view show only over its recipe, on one H100, where no
  // Llama 3 size leaves room.
  if (sentences.plateRecipe && !/\(16 bytes × /.test(readout)) {
    wrong.push("the caption speaks of the plate's recipe, which this is not");
  }
  if (sentences.noRoomCaption && !(/one H100 80 GB/.test(note) && none)) {
    wrong.push('the caption says one H100 leaves no room, beside a chart that shows room');
  }
  // A comparison: the difference is the two totals', this one the readout's, said less when it falls.
  const compared = (sentences.compare ?? '').match(
    new RegExp(
      `needs ${AMOUNT} (less|more) on its most loaded device than the pinned one \\(${AMOUNT} against ${AMOUNT}`,
    ),
  );
  if (compared) {
    const [difference, now, pinned] = [1, 4, 6].map((index) => amount(compared[index], compared[index + 1]));
    same('the compared total', now, total);
    const falls = now.bytes < pinned.bytes;
    if (
      !adds(falls ? pinned : now, [difference, falls ? now : pinned]) ||
      (compared[3] === 'less') !== falls
    ) {
      wrong.push('the comparison is not the difference of its two totals');
    }
  } else if (sentences.compare) {
    wrong.push(`the comparison is not said with its figures: ${sentences.compare}`);
  }
  // A notice that gives the total gives the readout's, and what it adds is more, never negative.
  const noticeTotal = notice.match(new RegExp(`the total is ${AMOUNT}, ${AMOUNT} (more|less)`));
  if (noticeTotal) same("the notice's total", amount(noticeTotal[1], noticeTotal[2]), total);
  if (/−\d[\d.,]* [GT]B more/.test(notice + readout)) wrong.push('a negative amount said to be more');
  return wrong;
}

/** The sentences and the numbers behind the charts, as a reader sees them. */
async function onScreen(page) {
  await page.click('.numbers summary');
  await page.waitForSelector('#breakdown-table tbody tr');
  const sentences = await page.evaluate(() => {
    const shown = (id) => {
      const element = document.getElementById(id);
      return element && !element.hidden ? element.textContent : '';
    };
    return {
      readout: shown('readout'),
      host: shown('host-readout'),
      stack: shown('stack-readout'),
      note: shown('activations-note'),
      notice: shown('url-notice'),
      verdict: shown('stack-verdict'),
      compare: shown('compare'),
      // Whether the caption's words for the plate's view show: its recipe, and no room on one H100.
      plateRecipe: [...document.querySelectorAll('.caption [data-plate-view]')].some((span) => !span.hidden),
      noRoomCaption: [...document.querySelectorAll('.caption [data-no-room]')].some((span) => !span.hidden),
    };
  });
  const rows = await tableRows(page, '#breakdown-table');
  await page.click('.numbers summary');
  return { sentences, rows };
}

// Each a link a reader might open, or a button they press there.
const WALK = [
  { query: '' },
  { query: '?flash-attention=off&model=llama3-70b' },
  { query: '?model=llama3.2-1b&device=rtx-4090' },
  { query: '?model=llama3.2-1b' },
  { query: '?device=custom&device-gb=160&tokens=32768' },
  { query: '?model=deepseek-v3' },
  { query: '?dp=8&zero=3&stack=torchtitan' },
  { query: '?dp=8&zero=1&stack=deepspeed' },
  { query: '?dp=8&zero=1&tp=2&sequence-parallel=on&stack=megatron' },
  { query: '?model=mistral-7b&stack=hf&precision=bf16&seq-len=2048&recompute=full' },
  { query: '?lora-rank=16&base-weights=nf4&offload=optimizer&offload-activations=on' },
  { query: '?logits=on&loss=fp32-upcast&recompute=full' },
  { query: '', press: '#try-qlora' },
  { query: '?dp=8', pin: ['#zero', '3'] },
  { query: '?model=llama3-70b', pin: ['#model', 'llama3-8b'] },
  { launch: 'torchtitan-llama3-8b-fsdp.toml', worldSize: '8' },
  { launch: 'megatron-llama3-8b.sh', worldSize: '' },
  { launch: 'axolotl-llama3.1-8b-qlora.yml', worldSize: '1' },
];

/** Reads a launch config from docs/examples/ into the workshop, as a reader does. */
async function readLaunch(page, file, worldSize) {
  await page.click('#launch-panel summary');
  await page.fill('#launch', await readFile(new URL(`../../docs/examples/${file}`, import.meta.url), 'utf8'));
  await page.fill('#launch-world-size', worldSize);
  await page.click('#use-launch');
  await page.waitForSelector('#launch-result:not([hidden])');
}

describe('the sentences against the figures beside them, in Chromium', () => {
  let harness;

  before(async () => {
    harness = await startHarness();
  });

  after(async () => {
    await harness?.close();
  });

  for (const { query = '', press, launch, worldSize, pin } of WALK) {
    const then = press
      ? `, then ${press}`
      : launch
        ? `, then ${launch} read`
        : pin
          ? `, pinned, then ${pin.join(' ')}`
          : '';
    it(`says nothing the figures contradict: ${query || 'the plate’s view'}${then}`, async () => {
      const { page, problems } = await harness.openPage({ query });
      if (press) await page.click(press);
      if (launch) await readLaunch(page, launch, worldSize);
      if (pin) {
        await page.click('#pin');
        await page.selectOption(...pin);
      }
      const { sentences, rows } = await onScreen(page);
      assert.deepEqual(contradictions(sentences, rows), [], JSON.stringify(sentences));
      assert.deepEqual(problems, []);
      await page.close();
    });
  }

  it('goes red when any figure in a sentence is altered', async () => {
    const { page } = await harness.openPage({ query: '?dp=8&zero=3' });
    await page.click('#pin');
    await page.selectOption('#stack', 'torchtitan');
    const { sentences, rows } = await onScreen(page);
    await page.close();
    assert.deepEqual(contradictions(sentences, rows), []);
    // Each amount in each sentence, in turn, half its unit more (a sum of five figures rounded to
    // a tenth may hide a tenth); but the logits left out, which no other figure on screen shows.
    let altered = 0;
    for (const key of ['readout', 'stack', 'note', 'compare']) {
      const text = sentences[key];
      const leftOut = text.indexOf('Not counted:');
      for (const found of text.matchAll(new RegExp(AMOUNT, 'g'))) {
        if (leftOut >= 0 && found.index > leftOut) continue;
        const [whole, number, unit] = found;
        const more = `${(Number(number.replaceAll(',', '')) + 0.5).toFixed(1)} ${unit}`;
        const wrong = text.slice(0, found.index) + more + text.slice(found.index + whole.length);
        assert.notDeepEqual(contradictions({ ...sentences, [key]: wrong }, rows), [], `${key}: ${wrong}`);
        altered += 1;
      }
    }
    assert.ok(altered >= 12, `only ${altered} figures altered`);
  });
});
