"""Opens an ``export --web`` folder in headless Chromium (Debian's package,
driven by ``puppeteer-core``; never a browser a tool downloads) and runs
texts through the page's own ``albert.js``.

The driver's npm packages are pinned in ``tests/web/package-lock.json`` and
installed once into the user's cache. Without Chromium the browser tests
skip, except under CI, where ``.ci/run`` installs it and a missing browser
fails.
"""

import contextlib
import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# the driver's scripts, copied beside its node_modules
_SCRIPTS = ("browser.mjs", "drive.mjs", "drive_transformers.mjs")


def need_browser():
    """Skips (fails under CI) when Chromium or npm is missing."""
    missing = [name for name, ok in (("chromium", os.path.exists(CHROMIUM)),
                                     ("npm", shutil.which("npm"))) if not ok]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{', '.join(missing)} missing: .ci/run installs them")
        pytest.skip(f"{', '.join(missing)} not installed (apt-get install chromium nodejs)")


@functools.cache
def _driver_folder():
    data = b"".join(open(os.path.join(HERE, n), "rb").read()
                    for n in ("package.json", "package-lock.json", "drive.mjs"))
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    folder = os.path.join(cache, "albert_keras", "browser-tests",
                          hashlib.sha256(data).hexdigest()[:16])
    if not os.path.isdir(os.path.join(folder, "node_modules")):
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        staging = tempfile.mkdtemp(dir=os.path.dirname(folder))
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(os.path.join(HERE, name), os.path.join(staging, name))
        subprocess.run(["npm", "ci", "--ignore-scripts", "--loglevel=error"], cwd=staging,
                       check=True, env={**os.environ, "PUPPETEER_SKIP_DOWNLOAD": "1"},
                       capture_output=True, timeout=600)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(staging, folder)
    for name in _SCRIPTS:
        shutil.copyfile(os.path.join(HERE, name), os.path.join(folder, name))
    return folder


@contextlib.contextmanager
def served(folder):
    """``folder`` on a local HTTP server; yields its base URL."""
    handler = functools.partial(_QuietHandler, directory=folder)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def run_page(folder, texts, screenshot=None, console=None):
    """The page's ``pack`` and ``classify`` (or ``embed``) of each text:
    ``[{"text", "pack", "result"}]``; fails with the page's console on error.
    ``console``: a list the page's console messages are added to
    (``"type: text"``)."""
    need_browser()
    driver = _driver_folder()
    with tempfile.TemporaryDirectory() as tmp, served(folder) as url:
        texts_path, out_path = os.path.join(tmp, "texts.json"), os.path.join(tmp, "out.json")
        with open(texts_path, "w", encoding="utf-8") as f:
            json.dump(texts, f)
        args = ["node", os.path.join(driver, "drive.mjs"), url + "index.html", texts_path,
                out_path] + ([screenshot] if screenshot else [])
        done = subprocess.run(args, cwd=driver, capture_output=True, text=True, timeout=600)
        with open(out_path, encoding="utf-8") as f:
            out = json.load(f)
    if console is not None:
        console.extend(out["console"])
    errors = [m for m in out["console"] if m.startswith(("pageerror", "error: Uncaught"))]
    assert done.returncode == 0 and not errors, (out.get("error"), out["console"], done.stderr)
    return out["texts"]


_ENCODE = """
import {Tokenizer} from '%s';
import {readFileSync} from 'node:fs';
const [tokenizer, config, texts, specials] = process.argv.slice(2).map(
    p => JSON.parse(readFileSync(p)));
const t = new Tokenizer(tokenizer, config);
console.log(JSON.stringify(texts.map(s => t.encode(s, {add_special_tokens: specials}).ids)));
"""


def _tokenizers_js(tokenizer_text, config_text, texts, special_tokens):
    """Ids of ``texts`` from tokenizers.js (the web page's copy, in Node.js)
    reading a ``tokenizer.json`` and ``tokenizer_config.json`` given as text."""
    from albert_keras.export.web_folder import runtime_folder

    if not shutil.which("node"):
        if os.environ.get("CI"):
            pytest.fail("node missing: .ci/run needs Node.js")
        pytest.skip("Node.js not installed")
    module = os.path.join(runtime_folder(), "@huggingface/tokenizers/dist/tokenizers.mjs")
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, text in (("tokenizer.json", tokenizer_text), ("config.json", config_text),
                           ("texts.json", json.dumps(texts)),
                           ("specials.json", json.dumps(special_tokens))):
            paths.append(os.path.join(tmp, name))
            with open(paths[-1], "w", encoding="utf-8") as f:
                f.write(text)
        script = os.path.join(tmp, "encode.mjs")
        with open(script, "w", encoding="utf-8") as f:
            f.write(_ENCODE % module)
        done = subprocess.run(["node", script, *paths], capture_output=True, text=True,
                              timeout=300, check=True)
    return json.loads(done.stdout)


def encode_in_node(tokenizer, texts):
    """Ids of ``texts`` from tokenizers.js reading ``tokenizer``'s web
    ``tokenizer.json`` (no special tokens: the page packs them)."""
    from albert_keras.text.tokenizer_json import tokenizer_config
    from albert_keras.text.tokenizer_json import tokenizer_json

    return _tokenizers_js(tokenizer_json(tokenizer), tokenizer_config(tokenizer), texts, False)


def encode_hf_folder_in_node(folder, texts):
    """Ids of ``texts`` from tokenizers.js reading an HF folder's
    ``tokenizer.json`` and ``tokenizer_config.json``, with the special
    tokens its post-processor adds."""
    files = []
    for name in ("tokenizer.json", "tokenizer_config.json"):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            files.append(f.read())
    return _tokenizers_js(*files, texts, True)


_TRANSFORMERS_PAGE = """<!doctype html>
<meta charset="utf-8"><title>transformers.js</title>
<script type="module">
import {AutoTokenizer, env, pipeline} from './transformers.min.js';
env.allowRemoteModels = false;  // the folder beside the page, never the hub
env.allowLocalModels = true;
env.localModelPath = './models/';
env.backends.onnx.wasm.wasmPaths = './ort/';
env.backends.onnx.wasm.numThreads = 1;
window.run = async (texts, {task, dtype}) => {
  const run = await pipeline(task, 'model', {dtype, device: 'wasm'});
  const tokenizer = await AutoTokenizer.from_pretrained('model');
  const out = [];
  for (const text of texts) {
    const ids = Array.from(tokenizer(text).input_ids.data, Number);
    out.push({ids, result: await run(text, {top_k: null})});
  }
  return out;
};
</script>
"""


def run_transformers_js(hf_folder, texts, task="text-classification", dtype="fp32"):
    """What transformers.js's ``pipeline(task)`` gives for each text in
    headless Chromium, with ``hf_folder`` as its local model (no hub) and
    ONNX Runtime Web's wasm files from the pinned package: ``[{"ids",
    "result"}]``, the ids its tokenizer gives and the pipeline's result."""
    need_browser()
    driver = _driver_folder()
    modules = os.path.join(driver, "node_modules")
    with tempfile.TemporaryDirectory() as site:
        with open(os.path.join(site, "index.html"), "w", encoding="utf-8") as f:
            f.write(_TRANSFORMERS_PAGE)
        shutil.copyfile(os.path.join(modules, "@huggingface/transformers/dist/transformers.min.js"),
                        os.path.join(site, "transformers.min.js"))
        os.symlink(os.path.join(modules, "onnxruntime-web", "dist"), os.path.join(site, "ort"))
        os.makedirs(os.path.join(site, "models"))
        os.symlink(os.path.abspath(hf_folder), os.path.join(site, "models", "model"))
        input_path, out_path = os.path.join(site, "input.json"), os.path.join(site, "out.json")
        with open(input_path, "w", encoding="utf-8") as f:
            json.dump({"texts": texts, "options": {"task": task, "dtype": dtype}}, f)
        with served(site) as url:
            done = subprocess.run(["node", os.path.join(driver, "drive_transformers.mjs"),
                                   url + "index.html", input_path, out_path], cwd=driver,
                                  capture_output=True, text=True, timeout=600)
        with open(out_path, encoding="utf-8") as f:
            out = json.load(f)
    assert done.returncode == 0 and "results" in out, (out.get("error"), out["console"],
                                                        done.stderr)
    return out["results"]
