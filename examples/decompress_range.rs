//! Decompresses the original bytes START..END of an archive, reading only the blocks that
//! cover them, and writes them to stdout or to OUT.
//!
//! Usage: `cargo run --release --example decompress_range -- FILE.sep START END [OUT]`
//!
//! START and END are byte offsets in the original file (END excluded; END past the end stops at
//! the end). Each block read is verified against its checksum. For example, after
//! `cargo run --release --example compress_file -- book1`:
//!
//! ```sh
//! cargo run --release --example decompress_range -- book1.sep 1000 3000 part
//! dd if=book1 bs=1 skip=1000 count=2000 status=none | cmp - part
//! ```

use std::fs::File;
use std::io::{BufReader, BufWriter, Seek, Write};
use std::process::ExitCode;

const USAGE: &str = "usage: decompress_range FILE.sep START END [OUT]   (stdout without OUT)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if !(3..=4).contains(&args.len()) {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let out = args.get(3).map(String::as_str);
    match run(&args[0], &args[1], &args[2], out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("decompress_range: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(archive: &str, start: &str, end: &str, out: Option<&str>) -> Result<(), String> {
    let offset = |s: &str| {
        s.parse::<u64>()
            .map_err(|_| format!("{s:?} is not a byte offset"))
    };
    let (start, end) = (offset(start)?, offset(end)?);
    if start > end {
        return Err(format!("START {start} is after END {end}"));
    }
    let mut input = File::open(archive).map_err(|e| format!("{archive}: {e}"))?;
    // The block table gives the original length, so that END past it stops at the end.
    let info = sep::inspect(&mut input).map_err(|e| format!("{archive}: {e}"))?;
    let end = end.min(info.original_bytes);
    if start > end {
        return Err(format!("START {start} is past the end ({end} bytes)"));
    }
    input.rewind().map_err(|e| format!("{archive}: {e}"))?;
    let output: Box<dyn Write> = match out {
        Some(path) => Box::new(File::create(path).map_err(|e| format!("{path}: {e}"))?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut output = BufWriter::new(output);
    let opts = sep::Options::default();
    let stats = sep::decompress_range(BufReader::new(input), &mut output, &opts, start..end)
        .map_err(|e| format!("{archive}: {e}"))?;
    output.flush().map_err(|e| e.to_string())?;
    eprintln!(
        "{archive}: bytes {start}..{} ({} bytes), {} archive bytes read",
        start + stats.original_bytes,
        stats.original_bytes,
        stats.archive_bytes
    );
    Ok(())
}
