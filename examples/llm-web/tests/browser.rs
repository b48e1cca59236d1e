//! The browser trial: the engine's page (`www/`, its module built for wasm32) in headless
//! Chromium on WebGPU, WGSL compiled by the browser, generates from the prompt of the CPU
//! runtime's committed run (`examples/llm/golden/cpu-trial.json`), and every step's token and
//! logit hash must equal that run's, the prompt's token ids (the web build's tokenizer) too.
//!
//! Chromium is the first of `chromium`, `chromium-browser` on the PATH. `ISLANDS_SKIP_BROWSER=1`
//! marks the trial ignored (`scripts/setup.sh` then installs none of its tools). The server's own
//! trials (`site::…`) need no browser and always run.

use island_llm::generate::{self, Agreement};
use island_llm::{model_file, record};
use island_llm_web::site::{self, Posted, Server};
use libtest_mimic::{Arguments, Failed, Trial};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The prompt of the committed CPU run (its token ids are checked against the file's).
const PROMPT: &str = "The three primary colors are";
/// How long the page may take, from Chromium's start to the run posted back: the module's
/// start, the model's 98 MB, and every kernel compiled by the browser on a software adapter.
const LIMIT: Duration = Duration::from_secs(600);

fn main() {
    let args = Arguments::from_args();
    let skip = island_vocab::settings::skip_browser();
    let ignored = matches!(skip, Ok(true));
    let trial = Trial::test("browser::webgpu_page_logits_equal_the_cpu_runtime", move || match &skip {
        Ok(_) => page_equals_cpu(),
        Err(e) => Err(e.to_string().into()),
    })
    .with_kind("browser")
    .with_ignored_flag(ignored);
    let site = [
        Trial::test("site::the_wasm_bindgen_version_is_the_locks", bindgen_version),
        Trial::test("site::serves_the_site_and_nothing_above_it", serves_only_the_site),
    ];
    libtest_mimic::run(&args, std::iter::once(trial).chain(site).collect()).exit();
}

/// The tool's version is read from the lock file's `wasm-bindgen` package, not another's.
fn bindgen_version() -> Result<(), Failed> {
    let lock = "[[package]]\nname = \"wasm-bindgen-futures\"\nversion = \"0.4.80\"\n\n[[package]]\nname = \"wasm-bindgen\"\nversion = \"0.2.130\"\n";
    if site::bindgen_version(lock).as_deref() != Some("0.2.130") {
        return Err(format!("read {:?} from {lock:?}", site::bindgen_version(lock)).into());
    }
    if let Some(v) = site::bindgen_version("[[package]]\nname = \"wasm-bindgen-macro\"\nversion = \"1\"\n") {
        return Err(format!("read {v} from a lock without the crate").into());
    }
    let real = std::fs::read_to_string(site::workspace().join("Cargo.lock"))?;
    site::bindgen_version(&real).map(drop).ok_or_else(|| "the workspace's Cargo.lock names no wasm-bindgen".into())
}

/// One request to `server`, the response's status line and body.
fn request(server: &Server, head: &str, body: &str) -> Result<(String, String), Failed> {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(server.addr)?;
    write!(stream, "{head} HTTP/1.0\r\nContent-Length: {}\r\n\r\n{body}", body.len())?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    let status = text.lines().next().unwrap_or_default().to_string();
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Ok((status, body))
}

/// The server hands out the site's files and the model, refuses paths above the site, and passes
/// on what the page posts.
fn serves_only_the_site() -> Result<(), Failed> {
    let root = std::env::temp_dir().join(format!("islands-site-{}", std::process::id()));
    let site = root.join("site");
    std::fs::create_dir_all(site.join("pkg"))?;
    std::fs::write(site.join("index.html"), "the page")?;
    std::fs::write(site.join("pkg/m.wasm"), "module")?;
    std::fs::write(root.join("secret"), "not served")?;
    std::fs::write(root.join("model"), "weights")?;
    let server = Server::start(site, root.join("model"), "127.0.0.1:0")?;
    let expect = |head: &str, status: &str, body: &str| -> Result<(), Failed> {
        let (s, b) = request(&server, head, "")?;
        if !s.contains(status) || (!body.is_empty() && b != body) {
            return Err(format!("`{head}`: {s} {b:?}, expected {status} {body:?}").into());
        }
        Ok(())
    };
    expect("GET /", "200", "the page")?;
    expect("GET /pkg/m.wasm", "200", "module")?;
    expect("GET /model.gguf", "200", "weights")?;
    for above in ["GET /../secret", "GET /pkg/../../secret", "GET //etc/passwd", "GET /missing.js"] {
        expect(above, "404", "")?;
    }
    let (s, _) = request(&server, "POST /run", "{\"prompt\": []}")?;
    let posted = server.next(Duration::from_secs(5));
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
    if !s.contains("200") || posted != Some(Posted::Run("{\"prompt\": []}".into())) {
        return Err(format!("POST /run: {s}, posted {posted:?}").into());
    }
    Ok(())
}

fn golden() -> PathBuf {
    site::workspace().join("examples/llm/golden/cpu-trial.json")
}

fn chromium() -> Result<PathBuf, Failed> {
    for name in ["chromium", "chromium-browser"] {
        if Command::new(name).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok() {
            return Ok(PathBuf::from(name));
        }
    }
    Err("no `chromium` on the PATH: `bash scripts/setup.sh` installs Debian's (ISLANDS_SKIP_BROWSER=1 skips this trial)".into())
}

/// Headless Chromium with WebGPU on whatever adapter it finds (SwiftShader on a machine without a
/// GPU), its own empty profile, and no network of its own.
fn launch(browser: &Path, url: &str, profile: &Path) -> Result<Child, Failed> {
    Command::new(browser)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--enable-unsafe-webgpu",
            "--enable-features=Vulkan",
            "--disable-gpu-sandbox",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-quic",
            "--no-first-run",
            "--enable-logging=stderr",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", browser.display()).into())
}

/// Kills the browser and returns the last lines it wrote.
fn stop(mut child: Child) -> String {
    let _ = child.kill();
    let _ = child.wait();
    let mut text = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut text);
    }
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(25)..].join("\n")
}

fn page_equals_cpu() -> Result<(), Failed> {
    let expected = record::read(&golden())?;
    let model = model_file::default_path()?;
    model_file::read(&model, true)?;
    let browser = chromium()?;
    let started = Instant::now();
    let site = site::build()?;
    eprintln!("browser: the page's module built in {:.1} s", started.elapsed().as_secs_f64());
    let server = Server::start(site, model, "127.0.0.1:0")?;
    let profile = std::env::temp_dir().join(format!("islands-chromium-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&profile);
    // The prompt one token a step: in one pass it takes the same bits (passed on 2026-12-05,
    // `docs/results/browser/`) but its batch kernels too, which Chromium compiles for SwiftShader
    // in about 100 s more.
    let query = format!("autorun=1&tokens={}&batch=1&prompt={}", expected.steps.len(), PROMPT.replace(' ', "%20"));
    let started = Instant::now();
    let child = launch(&browser, &server.url(&query), &profile)?;
    let outcome = loop {
        let left = LIMIT.saturating_sub(started.elapsed());
        match server.next(left) {
            Some(Posted::Log(line)) => eprintln!("browser: {line}"),
            Some(other) => break Some(other),
            None => break None,
        }
    };
    let log = stop(child);
    let _ = std::fs::remove_dir_all(&profile);
    let run = match outcome {
        Some(Posted::Run(text)) => text,
        Some(Posted::Error(why)) => {
            return Err(format!("the page stopped: {why}\nChromium's last lines:\n{log}").into());
        }
        _ => {
            return Err(format!("no run posted back in {} s\nChromium's last lines:\n{log}", LIMIT.as_secs()).into());
        }
    };
    eprintln!("browser: the page ran in {:.1} s; its run:\n{run}", started.elapsed().as_secs_f64());
    let got = record::parse(&run).map_err(|e| format!("the posted run is not a record ({e}):\n{run}"))?;
    if got.prompt != expected.prompt {
        return Err(format!(
            "the web build's tokenizer gave the prompt {:?}, the committed run's is {:?}",
            got.prompt, expected.prompt
        )
        .into());
    }
    match generate::compare(&got, &expected) {
        Agreement::Identical { .. } if got.steps.len() == expected.steps.len() => Ok(()),
        other => Err(format!("the page's run differs from the CPU runtime's committed one: {other:?}\n{run}").into()),
    }
}
