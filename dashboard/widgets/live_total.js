// The Bound explorer's total follows its p sliders in the browser (see live_total.py).
//
// data = {label, sliders: {<widget key>: {step, now, texts: {<position>: [value, change]}}}}: for each
// p slider that moves the total, its position when the server ran (position i is the value i * step)
// and the total's value and change against p* at positions near it, formatted by the server exactly
// as its own metric shows them. When a slider moves (a key press, a drag), the metric labelled
// `label` shows that position's texts in the same frame; the server's rerun then draws the same
// texts, and everything else on the page, as before. A position outside the table, a second slider
// moved before the server answered the first (its table holds the first one's old p), or a page laid
// out otherwise all leave the metric to the server.
//
// Streamlit calls this function again with each run's data, and the cleanup only on unmount, so one
// observer per mounted component reads the latest data from `instances`.

const instances = new WeakMap();

function textNodes(element) {
  const nodes = [];
  const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
    if (node.nodeValue.trim() !== "") nodes.push(node);
  }
  return nodes;
}

// Write into the text node React rendered (never replace it), so React's next render finds its own node.
function write(element, text) {
  const node = element && textNodes(element)[0];
  if (node && node.nodeValue !== text) node.nodeValue = text;
}

function show(label, texts) {
  const metric = [...document.querySelectorAll('[data-testid="stMetric"]')].find(
    (candidate) => candidate.querySelector('[data-testid="stMetricLabel"]')?.innerText.trim() === label,
  );
  if (!metric) return;
  write(metric.querySelector('[data-testid="stMetricValue"]'), texts[0]);
  write(metric.querySelector('[data-testid="stMetricDelta"]'), texts[1]);
}

function onMutations(state, records) {
  const { data } = state;
  for (const record of records) {
    const input = record.target;
    if (!(input instanceof HTMLInputElement) || input.type !== "range") continue;
    const key = Object.keys(data.sliders).find((candidate) => input.closest(`.st-key-${candidate}`));
    if (key === undefined) continue;
    const table = data.sliders[key];
    const position = Math.round(parseFloat(input.value) / table.step);
    if (position === state.positions[key]) continue; // drawn again at the same value: not a move
    state.positions[key] = position;
    if (state.moved !== null && state.moved !== key) continue; // this table holds the other slider's old p
    state.moved = key;
    const texts = table.texts[position];
    if (texts !== undefined) show(data.label, texts);
  }
}

export default function (component) {
  const { data, parentElement } = component;
  let state = instances.get(parentElement);
  if (state === undefined) {
    state = {};
    state.observer = new MutationObserver((records) => onMutations(state, records));
    // The slider's hidden range input: its value and aria-valuetext change as soon as the thumb moves.
    state.observer.observe(document.body, {
      attributes: true,
      attributeFilter: ["value", "aria-valuetext"],
      subtree: true,
    });
    instances.set(parentElement, state);
  }
  state.data = data;
  state.positions = Object.fromEntries(Object.entries(data.sliders).map(([key, table]) => [key, table.now]));
  state.moved = null;
  return () => {
    state.observer.disconnect();
    instances.delete(parentElement);
  };
}
