//! Replays every input the fuzzers ever kept (`fuzz/regressions/TARGET/`) through its target,
//! and every golden archive through every target, on stable Rust: none may panic.

use std::path::Path;

/// The fuzz targets (`fuzz/fuzz_targets`, one file each).
fn targets() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.trim_end_matches(".rs").replace('_', "-")
        })
        .collect();
    names.sort();
    names
}

#[test]
fn kept_fuzz_inputs_and_golden_archives_never_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let targets = targets();
    assert!(targets.len() >= 12, "{targets:?}");
    let golden: Vec<Vec<u8>> = std::fs::read_dir(root.join(format!(
        "tests/data/golden/v{}",
        sep::internals::format::VERSION
    )))
    .unwrap()
    .map(|e| std::fs::read(e.unwrap().path()).unwrap())
    .collect();
    assert!(!golden.is_empty());
    let mut replayed = 0;
    for target in &targets {
        for archive in &golden {
            sep::internals::fuzz(target, archive);
        }
        let kept = root.join("fuzz/regressions").join(target);
        for entry in std::fs::read_dir(kept).into_iter().flatten() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            sep::internals::fuzz(target, &bytes);
            replayed += 1;
        }
    }
    // The folder holds hand-made damaged archives at least: the replay must run something.
    assert!(replayed >= 7, "only {replayed} kept fuzz inputs replayed");
}
