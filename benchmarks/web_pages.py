"""The two pages ``web_speed.py`` times: each sets ``window.bench`` with a
``classify(text)`` that returns the top label."""

# Ours: the export's own albert.js; FIXED=true pads every text to the longest
# length (the file's main signature), as a file without length signatures runs.
OUR_PAGE = """<!doctype html>
<script type="importmap">
{"imports": {
  "@litertjs/core": "./vendor/litertjs/core/index.js",
  "@litertjs/wasm-utils": "./vendor/litertjs/wasm-utils/index.js",
  "@huggingface/tokenizers": "./vendor/tokenizers/tokenizers.min.mjs"
}}
</script>
<script type="module">
import {loadModel} from './albert.js';
const ready = loadModel('.').then(model => {
  if (FIXED) model.lengths = model.lengths.slice(-1);
  return model;
});
window.bench = {ready, classify: async text => (await (await ready).classify(text)).label};
</script>
"""

# transformers.js, its files served locally (no hub, no CDN).
HF_PAGE = """<!doctype html>
<script type="module">
import {env, pipeline} from './transformers.min.js';
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = './models/';
env.backends.onnx.wasm.wasmPaths = './ort/';
const ready = pipeline('text-classification', 'cls', {dtype: 'DTYPE', device: 'wasm'});
window.bench = {ready, classify: async text => (await (await ready)(text))[0].label};
</script>
"""
