// The page: loads the module and the model, generates, and shows each step's token and logit
// hash. With `?autorun=1` it generates once on load from `prompt`, `tokens` and `batch` (prompt
// tokens a pass) of the query, and posts the run (or why it stopped) back to the server it came
// from: the browser trial reads it.
import init, { generate } from "./pkg/island_llm_web.js";

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);
const autorun = query.get("autorun") === "1";
const status = (text) => { $("status").textContent = text; };
const post = (path, body) => autorun ? fetch(path, { method: "POST", body }) : Promise.resolve();

// A panic in the module aborts it ("unreachable"), and the promise it was serving never
// settles: such errors are reported from here.
let reported = false;
const fail = (text) => {
  status(`Stopped: ${text}`);
  $("status").className = "fail";
  if (!reported) { reported = true; post("error", text); }
};
window.addEventListener("error", (e) => fail(e.message || String(e.error)));
window.addEventListener("unhandledrejection", (e) => fail(String(e.reason && e.reason.message || e.reason)));

let model = null;

async function loadModel() {
  if (model) return model;
  status("Fetching the model (98 MB)…");
  const response = await fetch("model.gguf");
  if (!response.ok) throw new Error(`model.gguf: HTTP ${response.status}`);
  model = new Uint8Array(await response.arrayBuffer());
  return model;
}

async function describeAdapter() {
  if (!navigator.gpu) throw new Error("this browser has no WebGPU (navigator.gpu)");
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error("WebGPU gave no adapter");
  const info = adapter.info || {};
  const text = [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(" · ");
  $("adapter").textContent = `WebGPU adapter: ${text || "(not described)"}`;
  return text;
}

async function run(prompt, tokens, batch) {
  $("go").disabled = true;
  $("out").textContent = "";
  $("speed").textContent = "";
  const body = $("steps").tBodies[0];
  body.replaceChildren();
  try {
    const bytes = await loadModel();
    status("Compiling the kernels and running the prompt…");
    const result = await generate(bytes, prompt, tokens, batch, (step) => {
      const row = body.insertRow();
      for (const v of [step.index, step.token, JSON.stringify(step.piece), step.sha256]) {
        row.insertCell().textContent = v;
      }
      $("out").textContent += step.piece;
      status(`Generating: step ${step.index + 1} of ${tokens}`);
    });
    $("out").textContent = result.text;
    $("speed").textContent =
      `${result.tokens_per_second.toFixed(1)} tokens/s after the first; prompt and first token ${result.prompt_ms.toFixed(0)} ms; ${result.target}`;
    status("Done.");
    await post("log", $("speed").textContent);
    await post("run", result.record);
  } catch (e) {
    fail(e && e.message ? e.message : String(e));
  } finally {
    $("go").disabled = false;
  }
}

$("form").addEventListener("submit", (event) => {
  event.preventDefault();
  run($("prompt").value, Number($("tokens").value), Number($("batch").value));
});

try {
  await init();
  const adapter = await describeAdapter();
  await post("log", `adapter: ${adapter}`);
  status("Ready.");
  $("go").disabled = false;
  if (autorun) {
    if (query.has("prompt")) $("prompt").value = query.get("prompt");
    if (query.has("tokens")) $("tokens").value = query.get("tokens");
    if (query.has("batch")) $("batch").value = query.get("batch");
    await run($("prompt").value, Number($("tokens").value), Number($("batch").value));
  }
} catch (e) {
  fail(e && e.message ? e.message : String(e));
}
