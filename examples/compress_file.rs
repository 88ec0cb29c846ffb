//! Compresses a file into FILE.sep with the library and prints the sizes.
//!
//! Usage: `cargo run --release --example compress_file -- FILE [LEVEL]`
//!
//! LEVEL is 1 (fastest) to 9 (smallest); the default is the command line's, 6. An existing
//! FILE.sep is never overwritten. `sep decompress FILE.sep`, or the `decompress_range`
//! example, reads the archive back.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

const USAGE: &str = "usage: compress_file FILE [LEVEL]   (writes FILE.sep; LEVEL 1-9, default 6)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if args.is_empty() || args.len() > 2 {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    match run(&args[0], args.get(1).map(String::as_str)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("compress_file: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(path: &str, level: Option<&str>) -> Result<(), String> {
    let mut opts = sep::Options::default();
    if let Some(level) = level {
        opts.level = level
            .parse()
            .ok()
            .filter(|l| sep::LEVELS.contains(l))
            .ok_or_else(|| format!("level {level:?} is not one of 1-9"))?;
    }
    let input = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let out_path = format!("{path}.sep");
    // `create_new`: never overwrite an existing archive.
    let output = File::options()
        .write(true)
        .create_new(true)
        .open(&out_path)
        .map_err(|e| format!("{out_path}: {e}"))?;
    let mut output = BufWriter::new(output);
    let written = sep::compress(input, &mut output, &opts)
        .map_err(|e| e.to_string())
        .and_then(|stats| output.flush().map(|()| stats).map_err(|e| e.to_string()));
    let stats = written.map_err(|e| {
        // Leave no half-written archive behind.
        let _ = std::fs::remove_file(&out_path);
        format!("{path}: {e}")
    })?;
    let ratio = stats.original_bytes as f64 / stats.archive_bytes.max(1) as f64;
    println!(
        "{path}: {} bytes -> {out_path}: {} bytes ({ratio:.3}x, {} blocks)",
        stats.original_bytes, stats.archive_bytes, stats.blocks
    );
    Ok(())
}
