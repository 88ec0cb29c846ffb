//! Compresses a file in memory with sep, decompresses it again and checks the round trip.
//! `cargo run --release --example roundtrip -- FILE`

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: roundtrip FILE")?;
    let data = std::fs::read(&path)?;
    let opts = sep::Options::default();
    let mut archive = Vec::new();
    let stats = sep::compress_bytes(&data, &mut archive, &opts)?;
    let mut back = Vec::new();
    sep::decompress_to_vec(&archive, &mut back, &opts)?;
    assert!(back == data, "the round trip changed the data");
    println!(
        "{path}: {} -> {} bytes in {} blocks",
        data.len(),
        archive.len(),
        stats.blocks
    );
    Ok(())
}
