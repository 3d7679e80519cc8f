// Runs an albert-keras --metadata export in the browser with MediaPipe's
// TextClassifier or TextEmbedder, which tokenize the text themselves from the
// tokenizer packed in the file. MediaPipe's tokenizers lower-case ASCII only
// and strip no accents, so the text is first lower-cased and stripped of its
// accents here wherever albert-keras' tokenizer does so; then MediaPipe gives
// the model's own ids. Loaded by albert.js for a model.json whose runtime is
// "mediapipe"; the same classify/embed as albert.js's TextModel.
//
// Written by albert-keras; served as it is beside model.json.

import {FilesetResolver, TextClassifier, TextEmbedder} from '@mediapipe/tasks-text';
import {checkText} from './albert.js';

export async function loadMediaPipeModel(root, config, options = {}) {
  const fileset = await FilesetResolver.forTextTasks(
      options.wasm ?? root + 'vendor/mediapipe/wasm');
  const base = {baseOptions: {modelAssetPath: root + config.model}};
  const task = config.kind === 'classifier' ?
      await TextClassifier.createFromOptions(fileset, {...base, maxResults: -1}) :
      await TextEmbedder.createFromOptions(fileset, base);
  return new MediaPipeModel(config, task);
}

export class MediaPipeModel {
  constructor(config, task) {
    this.config = config;
    this.task = task;
    this.lengths = [{name: 'serving_default', length: config.sequence_length}];
  }

  /** The text as albert-keras' tokenizer sees it before its pieces. */
  prepare(text) {
    checkText(text);
    const {lowercase, strip_accents: strip} = this.config.prepare;
    let out = lowercase ? text.toLowerCase() : text;
    if (strip) out = out.normalize('NFD').replace(/\p{Mn}/gu, '');
    return out;
  }

  async classify(text) {
    const categories = this.task.classify(this.prepare(text)).classifications[0].categories;
    const labels = this.config.labels;
    const probabilities = new Float32Array(labels.length);
    for (const c of categories) probabilities[c.index] = c.score;
    const scores = labels.map((label, i) => ({label, score: probabilities[i]}));
    const best = scores.reduce((x, y) => (y.score > x.score ? y : x));
    return {label: best.label, scores, probabilities, length: this.config.sequence_length};
  }

  async embed(text) {
    return Float32Array.from(this.task.embed(this.prepare(text)).embeddings[0].floatEmbedding);
  }
}
