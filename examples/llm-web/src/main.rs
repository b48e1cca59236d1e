//! `island-llm-serve`: builds the engine's page and serves it, with the model file, on the
//! loopback interface, for any browser with WebGPU.
//!
//! ```text
//! cargo run -p island-llm-web            # then open the address it prints
//! cargo run -p island-llm-web -- --port 8080
//! ```

use clap::Parser;
use island_llm::model_file;
use island_llm_web::site::{self, Posted, Server};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(version, about = "Builds and serves SmolLM2-135M's web page (WebGPU) on 127.0.0.1")]
struct Args {
    /// The port (0: any free one).
    #[arg(long, default_value_t = 8000)]
    port: u16,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let served = (|| -> Result<Server, String> {
        let model = model_file::default_path().map_err(|e| e.to_string())?;
        if !model.exists() {
            return Err(format!("no model at {} (`bash scripts/fetch-model.sh` fetches it)", model.display()));
        }
        eprintln!("building the page's module (cargo, wasm-bindgen)…");
        let site = site::build().map_err(|e| e.to_string())?;
        Server::start(site, model, &format!("127.0.0.1:{}", args.port)).map_err(|e| e.to_string())
    })();
    let server = match served {
        Ok(s) => s,
        Err(e) => {
            eprintln!("island-llm-serve: {e}");
            return ExitCode::from(2);
        }
    };
    println!("serving http://{}/ (Ctrl-C stops)", server.addr);
    loop {
        if let Some(Posted::Error(e)) = server.next(Duration::from_secs(3600)) {
            eprintln!("the page stopped: {e}");
        }
    }
}
