//! The page as a site (native): its module built for `wasm32-unknown-unknown` and bound to
//! JavaScript by `wasm-bindgen`, in a folder beside the page's own files (`www/`), and a server
//! on the loopback interface that serves that folder and the model file, and takes the run the
//! page posts back.

use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The cargo profile the module is built with.
pub const PROFILE: &str = "web";
/// The module's target.
pub const TARGET: &str = "wasm32-unknown-unknown";

/// Why the site could not be built or served.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    #[error("{tool} is needed to build the page ({why}); `bash scripts/setup.sh` installs it")]
    MissingTool { tool: String, why: String },
    #[error("`{command}` failed ({status}):\n{output}")]
    Failed { command: String, status: String, output: String },
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("serving the page: {0}")]
    Serve(String),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SiteError {
    let what = what.into();
    move |source| SiteError::Io { what, source }
}

/// The workspace's root folder.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The version of `wasm-bindgen` the workspace's lock file pins: the `wasm-bindgen` tool must be
/// the same version, since the bindings it writes and the crate's side must agree.
pub fn bindgen_version(lock: &str) -> Option<String> {
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "name = \"wasm-bindgen\"" {
            let version = lines.next()?.trim().strip_prefix("version = \"")?.strip_suffix('"')?;
            return Some(version.to_string());
        }
    }
    None
}

/// Where `scripts/setup.sh` installs the `wasm-bindgen` tool of `version`.
pub fn bindgen_install(version: &str) -> PathBuf {
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from(".local/share"));
    data.join("islands").join(format!("wasm-bindgen-{version}")).join("bin/wasm-bindgen")
}

/// The `wasm-bindgen` tool of `version`: `scripts/setup.sh`'s install, else one on the `PATH`
/// that says it is that version.
fn bindgen(version: &str) -> Result<PathBuf, SiteError> {
    let installed = bindgen_install(version);
    let candidates = [installed.clone(), PathBuf::from("wasm-bindgen")];
    for tool in candidates {
        if let Ok(out) = Command::new(&tool).arg("--version").output()
            && String::from_utf8_lossy(&out.stdout).split_whitespace().nth(1) == Some(version)
        {
            return Ok(tool);
        }
    }
    Err(SiteError::MissingTool {
        tool: format!("wasm-bindgen {version}"),
        why: format!("not at {} nor on the PATH", installed.display()),
    })
}

fn run(command: &mut Command) -> Result<(), SiteError> {
    let shown = format!("{command:?}");
    let out = command.output().map_err(io(format!("starting {shown}")))?;
    if out.status.success() {
        return Ok(());
    }
    let mut output = String::from_utf8_lossy(&out.stderr).into_owned();
    output += &String::from_utf8_lossy(&out.stdout);
    let tail: Vec<&str> = output.lines().rev().take(40).collect();
    Err(SiteError::Failed {
        command: shown,
        status: out.status.to_string(),
        output: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
    })
}

/// Builds the site into `<target>/web/site`: the module (`cargo build` for wasm32 in its own
/// target folder, so that it never waits on a build of the workspace), its bindings, and the
/// page's files. Returns the folder.
pub fn build() -> Result<PathBuf, SiteError> {
    let root = workspace();
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).map_err(io("reading Cargo.lock"))?;
    let version = bindgen_version(&lock).ok_or_else(|| SiteError::MissingTool {
        tool: "wasm-bindgen".into(),
        why: "Cargo.lock names no version of the crate".into(),
    })?;
    let bindgen = bindgen(&version)?;
    let out = root.join("target/web");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let installed = Command::new("rustc").args(["--print", "target-libdir", "--target", TARGET]).output();
    if !installed.is_ok_and(|o| o.status.success() && Path::new(String::from_utf8_lossy(&o.stdout).trim()).exists()) {
        return Err(SiteError::MissingTool {
            tool: format!("Rust's {TARGET} target"),
            why: format!("`rustup target add {TARGET}`"),
        });
    }
    run(Command::new(cargo)
        .current_dir(&root)
        .args(["build", "--lib", "-p", "island-llm-web", "--profile", PROFILE, "--target", TARGET, "--target-dir"])
        .arg(&out)
        // The host's rustc wrapper and flags (CI's lint driver) are not for this target.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("RUSTC_WRAPPER"))?;
    let module = out.join(TARGET).join(PROFILE).join("island_llm_web.wasm");
    let site = out.join("site");
    run(Command::new(bindgen)
        .args(["--target", "web", "--no-typescript", "--out-dir"])
        .arg(site.join("pkg"))
        .arg(&module))?;
    let www = Path::new(env!("CARGO_MANIFEST_DIR")).join("www");
    for entry in std::fs::read_dir(&www).map_err(io(format!("reading {}", www.display())))? {
        let path = entry.map_err(io("listing www/"))?.path();
        let name = path.file_name().unwrap_or_default();
        std::fs::copy(&path, site.join(name)).map_err(io(format!("copying {}", path.display())))?;
    }
    Ok(site)
}

/// What the page posted back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Posted {
    /// `POST /run`: the finished run, as `island-llm --record` writes it.
    Run(String),
    /// `POST /error`: why the page stopped.
    Error(String),
    /// `POST /log`: a line of progress.
    Log(String),
}

/// The page's server: `site` at `/`, the model file at `/model.gguf`, and what the page posts.
pub struct Server {
    pub addr: SocketAddr,
    pub posted: mpsc::Receiver<Posted>,
    server: std::sync::Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `site` and `model` on `addr` (port 0: any free port).
    pub fn start(site: PathBuf, model: PathBuf, addr: &str) -> Result<Server, SiteError> {
        let server = std::sync::Arc::new(tiny_http::Server::http(addr).map_err(|e| SiteError::Serve(e.to_string()))?);
        let addr = server.server_addr().to_ip().ok_or_else(|| SiteError::Serve("not an IP address".into()))?;
        let (tx, posted) = mpsc::channel();
        let inner = server.clone();
        let thread = std::thread::spawn(move || {
            for request in inner.incoming_requests() {
                respond(request, &site, &model, &tx);
            }
        });
        Ok(Server { addr, posted, server, thread: Some(thread) })
    }

    /// The page's address, with a query (`tokens=3&prompt=…`).
    pub fn url(&self, query: &str) -> String {
        format!("http://{}/?{query}", self.addr)
    }

    /// The next thing posted, or `None` after `timeout`.
    pub fn next(&self, timeout: Duration) -> Option<Posted> {
        self.posted.recv_timeout(timeout).ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn respond(mut request: tiny_http::Request, site: &Path, model: &Path, tx: &mpsc::Sender<Posted>) {
    let url = request.url().split('?').next().unwrap_or("/").to_string();
    let reply = |request: tiny_http::Request, code: u16, body: &str| {
        let _ = request.respond(tiny_http::Response::from_string(body).with_status_code(code));
    };
    if *request.method() == tiny_http::Method::Post {
        let mut body = String::new();
        if request.as_reader().read_to_string(&mut body).is_err() {
            return reply(request, 400, "not UTF-8");
        }
        let posted = match url.as_str() {
            "/run" => Posted::Run(body),
            "/error" => Posted::Error(body),
            "/log" => Posted::Log(body),
            _ => return reply(request, 404, "no such endpoint"),
        };
        let _ = tx.send(posted);
        return reply(request, 200, "");
    }
    let path = match url.as_str() {
        "/" => site.join("index.html"),
        "/model.gguf" => model.to_path_buf(),
        _ => {
            let relative = Path::new(url.trim_start_matches('/'));
            // Only plain names below the site folder.
            if !relative.components().all(|c| matches!(c, Component::Normal(_))) {
                return reply(request, 404, "not found");
            }
            site.join(relative)
        }
    };
    let kind = match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css",
        _ => "application/octet-stream",
    };
    match std::fs::File::open(&path) {
        Ok(file) => {
            let header = tiny_http::Header::from_bytes("Content-Type", kind).expect("a valid header");
            let _ = request.respond(tiny_http::Response::from_file(file).with_header(header));
        }
        Err(_) => reply(request, 404, "not found"),
    }
}
