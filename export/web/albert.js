// Runs an albert-keras export in the browser: tokenizes as albert-keras does
// (tokenizers.js reading the folder's tokenizer.json), packs [CLS] text [SEP]
// at the shortest length the file carries that holds the text, and runs the
// .tflite with LiteRT.js on its wasm CPU path. Inputs are bound by name, never
// by position: a runtime lists a file's inputs in the file's own order.
//
//   import {loadModel} from './albert.js';
//   const model = await loadModel('.');
//   const {label, scores} = await model.classify('a fine film');
//
// Written by albert-keras; served as it is beside model.json.

// LiteRT.js and tokenizers.js, imported when first needed (a --metadata
// folder holds MediaPipe instead), and LiteRT.js's wasm, loaded once per page
let litert = null;
let wasmLoaded = null;

async function json(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.json();
}

/**
 * Loads the model of an export --web folder.
 * @param {string} base the folder's URL ('.' for the page beside it).
 * @param {{wasm?: string, threads?: boolean}} options where LiteRT.js's wasm
 *     files are (default: the folder's vendor copy) and whether to use threads
 *     (default: when the page is cross-origin isolated, which threads need).
 */
export async function loadModel(base = '.', options = {}) {
  const root = base.endsWith('/') ? base : base + '/';
  const config = await json(root + 'model.json');
  if (config.runtime === 'mediapipe') {  // a --metadata file: MediaPipe tokenizes
    const {loadMediaPipeModel} = await import('./mediapipe.js');
    return loadMediaPipeModel(root, config, options);
  }
  const [tokenizerJson, tokenizerConfig, {Tokenizer}] = await Promise.all(
      [json(root + 'tokenizer.json'), json(root + 'tokenizer_config.json'),
       import('@huggingface/tokenizers')]);
  litert ??= await import('@litertjs/core');
  const threads = options.threads ?? globalThis.crossOriginIsolated === true;
  wasmLoaded ??= loadLiteRtQuietly(options.wasm ?? root + 'vendor/litertjs/wasm/', threads);
  await wasmLoaded;
  const compiled = await litert.loadAndCompile(root + config.model, {accelerator: 'wasm'});
  const model = new TextModel(config, new Tokenizer(tokenizerJson, tokenizerConfig), compiled);
  if (config.corpus) model.corpus = await json(root + config.corpus);  // {texts, vectors}
  return model;
}

/**
 * Refuses what albert-keras' predict refuses: a text that is not a string, or
 * one that is empty or only spaces (a model would still score it, from
 * nothing but [CLS] and [SEP]).
 * @param {*} text what was given.
 * @param {string} what how the message names it.
 */
export function checkText(text, what = 'text') {
  if (typeof text !== 'string') {
    throw new TypeError(`${what}: expected a string, got ${text === null ? 'null' : typeof text}`);
  }
  if (!text.trim()) throw new Error(`${what}: empty text; give some words to classify`);
}

// LiteRT's C++ start-up lines (INFO: environment, accelerators, XNNPACK; a
// WARNING that no NPU could be loaded) reach the page through Emscripten's
// printErr, which the console shows as errors. They are expected on every
// page, so they go to console.debug (DevTools' "Verbose" level); any other
// line LiteRT writes is still an error.
const EXPECTED_LITERT_LINE = /^(INFO: |WARNING: \[npu_registry\.cc)/;

function loadLiteRtQuietly(wasmPath, threads) {
  // LiteRT.js probes WebGPU before it can be told not to (loadLiteRt takes no
  // environment options), and the browser warns when it finds no adapter:
  // said once here, since those warnings cannot be quieted
  console.info('albert.js: LiteRT.js looks for WebGPU and NPU accelerators when it ' +
               'starts; this page runs the model on the CPU (wasm), so warnings that ' +
               'none was found are expected.');
  // the Emscripten module settings LiteRT.js's loader passes on (self.Module)
  globalThis.Module = {
    print: line => console.debug(`LiteRT: ${line}`),
    printErr: line => (EXPECTED_LITERT_LINE.test(line) ? console.debug : console.error)(
        `LiteRT: ${line}`),
  };
  return litert.loadLiteRt(wasmPath, {threads});
}

/** Cuts ids to `budget` as albert-keras' packer does for one text. */
function cutOne(ids, budget, mode) {
  if (ids.length <= budget) return ids;
  if (mode === 'tail') return ids.slice(ids.length - budget);
  if (mode === 'head+tail') {
    const head = Math.floor(budget / 4);
    return ids.slice(0, head).concat(ids.slice(ids.length - (budget - head)));
  }
  return ids.slice(0, budget);  // head, and longest_first/waterfall of one text
}

/** Two segments' kept lengths: round robin (longest_first) or waterfall. */
function cutTwo(a, b, budget, mode) {
  if (mode === 'waterfall') {
    const first = Math.min(a.length, budget);
    return [first, Math.min(b.length, budget - first)];
  }
  let [first, second] = [0, 0];
  while (first + second < budget && (first < a.length || second < b.length)) {
    if (first < a.length) first++;
    if (first + second < budget && second < b.length) second++;
  }
  return [first, second];
}

export class TextModel {
  constructor(config, tokenizer, compiled) {
    this.config = config;
    this.tokenizer = tokenizer;
    this.compiled = compiled;
    // the signatures, shortest input length first
    this.lengths = Object.entries(config.signatures)
        .map(([name, length]) => ({name, length}))
        .sort((x, y) => x.length - y.length);
  }

  /** Token ids of a text, without special tokens. */
  tokenize(text) {
    return this.tokenizer.encode(text, {add_special_tokens: false}).ids;
  }

  /**
   * The model's inputs for one text (and an optional second text), packed at
   * the shortest length that holds them.
   * @return {{signature: string, length: number, ids: number[],
   *     mask: number[], segment_ids: number[]}}
   */
  pack(text, pair = null) {
    checkText(text);
    if (pair !== null) checkText(pair, 'second text');
    const a = this.tokenize(text);
    const b = pair === null ? null : this.tokenize(pair);
    const specials = b === null ? 2 : 3;
    const needed = a.length + (b === null ? 0 : b.length) + specials;
    const chosen = this.lengths.find(s => s.length >= needed) ??
        this.lengths[this.lengths.length - 1];
    const budget = chosen.length - specials;
    const ids = this.config.special_ids;
    let tokens, segments;
    if (b === null) {
      const kept = cutOne(a, budget, this.config.truncate);
      tokens = [ids.cls, ...kept, ids.sep];
      segments = tokens.map(() => 0);
    } else {
      const [first, second] = cutTwo(a, b, budget, this.config.truncate);
      tokens = [ids.cls, ...a.slice(0, first), ids.sep, ...b.slice(0, second), ids.sep];
      segments = tokens.map((_, i) => (i < first + 2 ? 0 : 1));
    }
    const pad = chosen.length - tokens.length;
    return {
      signature: chosen.name,
      length: chosen.length,
      ids: tokens.concat(Array(pad).fill(ids.pad)),
      mask: tokens.map(() => 1).concat(Array(pad).fill(0)),
      segment_ids: segments.concat(Array(pad).fill(0)),
    };
  }

  /** The file's outputs for packed inputs: {output name: Float32Array}. */
  async run(packed) {
    const inputs = {};
    for (const name of ['ids', 'mask', 'segment_ids']) {
      inputs[name] = new litert.Tensor(Int32Array.from(packed[name]), [1, packed.length]);
    }
    let outputs;
    try {
      outputs = await this.compiled.run(packed.signature, inputs);
    } finally {
      for (const tensor of Object.values(inputs)) tensor.delete();
    }
    const values = {};
    for (const [name, tensor] of Object.entries(outputs)) {
      values[name] = Float32Array.from(tensor.toTypedArray());
      tensor.delete();
    }
    return values;
  }

  /**
   * A classifier's scores for a text: {label, scores: [{label, score}],
   * logits, length}; scores are the softmax of the logits.
   */
  async classify(text, pair = null) {
    if (this.config.kind !== 'classifier') {
      throw new Error(`classify: this model is a ${this.config.kind}`);
    }
    const packed = this.pack(text, pair);
    const out = await this.run(packed);
    const logits = out.logits ?? out.probability;
    const probabilities = out.probability ?? softmax(logits);
    const labels = this.config.labels.length ? this.config.labels :
        Array.from(logits, (_, i) => String(i));
    const scores = labels.map((label, i) => ({label, score: probabilities[i]}));
    const best = scores.reduce((x, y) => (y.score > x.score ? y : x));
    return {label: best.label, scores, logits, length: packed.length};
  }

  /** An embedder's vector for a text (Float32Array). */
  async embed(text) {
    if (this.config.kind !== 'embedder') {
      throw new Error(`embed: this model is a ${this.config.kind}`);
    }
    const out = await this.run(this.pack(text));
    return out[this.config.outputs[0]];
  }

  /**
   * The corpus texts nearest a query (a folder exported with --web-corpus):
   * [{text, score}] by cosine, best first, at most k.
   */
  async search(query, k = 5) {
    if (!this.corpus) throw new Error('search: this folder holds no corpus (--web-corpus)');
    const vector = await this.embed(query);
    const hits = this.corpus.vectors.map((v, i) => ({text: this.corpus.texts[i],
                                                     score: cosine(vector, v)}));
    hits.sort((a, b) => b.score - a.score);
    return hits.slice(0, k);
  }
}

export function softmax(logits) {
  const top = Math.max(...logits);
  const exps = Array.from(logits, x => Math.exp(x - top));
  const sum = exps.reduce((x, y) => x + y, 0);
  return exps.map(x => x / sum);
}

export function cosine(a, b) {
  let [dot, na, nb] = [0, 0, 0];
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}
