//! Pre-trained model packs: the predictor's learnt state after training on data of one type, from
//! which a block's model starts instead of from nothing.
//!
//! A pack file is a safetensors file. Its metadata: `format` (`sep-pack`), `version` (`1`), `name`,
//! `type` (the kind of data it was trained on), `config` (hex of the context-mixing configuration
//! it fits, without any pack), `slots_log` and `order2_bits` (the geometry of the tables, which a
//! block using the pack takes), `description` (the training data) and `sep_version`. Its tensors
//! are the predictor's state (`State`): `slots` (u8, the hashed contexts' bit histories, 16 bytes a
//! slot), `tiles` (u8, per slot the 8 bits of its hash above the index, so that a larger table
//! places it), `maps` (u32, one row of 256 counters per context), `t0`, `t1`, `tm` (u32 counters),
//! `mix_a` .. `mix_e` with `mix_a_uses` .. (f32 weights, u32 uses), `apm_a` .. `apm_c` (u16),
//! `chain` (f32), `net` (f32, only with a network) and `history` (u8, the training data's last
//! bytes, a multiple of 16 and at most `HISTORY_MAX`; may be empty or absent). It may also carry
//! a pre-trained network (`codecs/net/frozen.rs`), its tensors named `frozen.` and theirs:
//! every block that starts from the pack mixes its predictions in, in place of the online
//! network. A pack may share the tables of a built-in pack: its metadata then names it (`base`,
//! `base_sha256`), it leaves out the tensors of `BASE_TENSORS` and takes the base's geometry.
//! A pack is named in an archive by its name and the SHA-256 of the whole file.

use crate::codecs::net::frozen::Frozen;
use crate::error::{Error, Result};
use crate::format::checksum::hex;
use safetensors::{Dtype, SafeTensors};
use sha2::{Digest, Sha256};
use std::fmt;
use std::sync::Arc;

/// A pack built into sep.
#[cfg(feature = "builtin-pack")]
struct Builtin {
    file: &'static [u8],
    /// Its SHA-256 in hex, written beside the file so that loading it does not hash it (a test
    /// checks them).
    sha256: &'static str,
    /// Whether a level may choose it; a superseded pack stays only so that the archives that
    /// name it decode.
    current: bool,
}

/// The built-in packs (`pretrained/build.sh` and `networks.sh` make them), which the blocks
/// that look like text start from unless told otherwise, each at the level it fits: `text` the
/// default level's; `text9` and `code9` level 9's (which share `text`'s tables and carry the
/// text and code networks); and the `text9` superseded; in builds with the `builtin-pack`
/// feature (on by default), as they add 31 MB to the binary. A base comes before the packs
/// that share it.
#[cfg(feature = "builtin-pack")]
static BUILTINS: [Builtin; 4] = [
    Builtin {
        file: include_bytes!("../../../pretrained/text.pack"),
        sha256: include_str!("../../../pretrained/text.pack.sha256"),
        current: true,
    },
    Builtin {
        file: include_bytes!("../../../pretrained/text9.pack"),
        sha256: include_str!("../../../pretrained/text9.pack.sha256"),
        current: true,
    },
    Builtin {
        file: include_bytes!("../../../pretrained/code9.pack"),
        sha256: include_str!("../../../pretrained/code9.pack.sha256"),
        current: true,
    },
    Builtin {
        file: include_bytes!("../../../pretrained/text9-v1.pack"),
        sha256: include_str!("../../../pretrained/text9-v1.pack.sha256"),
        current: false,
    },
];

/// Whether this build holds the built-in packs.
pub const BUILTIN: bool = cfg!(feature = "builtin-pack");

/// The built-in packs, parsed on first use, each with whether a level may choose it; none in a
/// build without them.
#[cfg(not(feature = "builtin-pack"))]
pub fn builtins() -> Result<Vec<(Arc<Pack>, bool)>> {
    Ok(Vec::new())
}

/// The built-in packs, parsed on first use, each with whether a level may choose it.
#[cfg(feature = "builtin-pack")]
pub fn builtins() -> Result<Vec<(Arc<Pack>, bool)>> {
    use std::sync::OnceLock;
    type Parsed = std::result::Result<Vec<(Arc<Pack>, bool)>, String>;
    static PARSED: OnceLock<Parsed> = OnceLock::new();
    PARSED
        .get_or_init(|| {
            let mut packs: Vec<(Arc<Pack>, bool)> = Vec::new();
            for b in &BUILTINS {
                let sha = unhex(b.sha256.trim())
                    .and_then(|h| <[u8; 32]>::try_from(h).ok())
                    .ok_or("a recorded hash is not 64 hex digits")?;
                let pack = Pack::parse(b.file, sha, |id| {
                    packs.iter().map(|(p, _)| p).find(|p| p.id == *id).cloned()
                })
                .map_err(|e| e.to_string())?;
                packs.push((Arc::new(pack), b.current));
            }
            Ok(packs)
        })
        .clone()
        .map_err(|e| Error::BadPack(format!("the built-in packs: {e}")))
}

/// The built-in packs a level may choose.
pub fn current() -> Result<Vec<Arc<Pack>>> {
    Ok(builtins()?
        .into_iter()
        .filter_map(|(p, current)| current.then_some(p))
        .collect())
}

/// The built-in pack of `id`, current or superseded, if this build has it.
pub fn builtin_of(id: &PackId) -> Result<Option<Arc<Pack>>> {
    Ok(builtins()?
        .into_iter()
        .map(|(p, _)| p)
        .find(|p| p.id == *id))
}

/// The current built-in pack named `name`, if this build has it.
pub fn builtin(name: &str) -> Result<Arc<Pack>> {
    current()?
        .into_iter()
        .find(|p| p.id.name == name)
        .ok_or_else(|| match BUILTIN {
            true => Error::BadPack(format!("no built-in pack named '{name}'")),
            false => Error::BadPack(
                "this build has no built-in pack (the `builtin-pack` feature is off)".into(),
            ),
        })
}

/// What identifies a pack in an archive: its name and the SHA-256 of its file.
#[derive(Clone, PartialEq, Eq)]
pub struct PackId {
    /// Short name (at most `NAME_MAX` bytes of UTF-8).
    pub name: String,
    /// SHA-256 of the pack file.
    pub sha256: [u8; 32],
}

/// Longest pack name.
pub const NAME_MAX: usize = 64;

/// Whether `name` may name a pack: 1 to `NAME_MAX` bytes, no control character (a name is
/// printed in messages and listings, and an archive's could otherwise reach a terminal).
pub fn name_valid(name: &str) -> bool {
    !name.is_empty() && name.len() <= NAME_MAX && !name.chars().any(char::is_control)
}

impl PackId {
    /// The hash in lowercase hex.
    pub fn hex(&self) -> String {
        hex(&self.sha256)
    }
}

impl fmt::Debug for PackId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (sha256 {})", self.name, self.hex())
    }
}

impl fmt::Display for PackId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The predictor's learnt state, as a pack holds it.
#[derive(Clone, Default, PartialEq)]
pub struct State {
    pub slots: Vec<u8>,
    /// Per slot of 16 bytes, the 8 bits of its context's hash above the index bits.
    pub tiles: Vec<u8>,
    pub maps: Vec<u32>,
    pub t0: Vec<u32>,
    pub t1: Vec<u32>,
    pub tm: Vec<u32>,
    /// Weights and per-set uses of the five mixers, in the predictor's order.
    pub mixers: [(Vec<f32>, Vec<u32>); 5],
    pub apms: [Vec<u16>; 3],
    pub chain: Vec<f32>,
    pub net: Vec<f32>,
    /// The training data's last bytes, which a block's contexts and matches see before its
    /// first byte.
    pub history: Vec<u8>,
}

/// Longest history a pack may hold.
pub const HISTORY_MAX: usize = 16 << 20;
/// A pack's history is a whole number of these, so that lane 0's positions keep the block's
/// alignment for the aligned contexts.
pub const HISTORY_ALIGN: usize = 16;

/// Table sizes a pack fixes for the blocks that use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// log2 of the hashed contexts' slots.
    pub slots_log: u32,
    /// Bits of the order-2 probability map's hash.
    pub order2_bits: u32,
}

/// Accepted `Geometry::slots_log` values.
pub const SLOTS_LOG: std::ops::RangeInclusive<u32> = 12..=24;
/// Accepted `Geometry::order2_bits` values.
pub const ORDER2_BITS: std::ops::RangeInclusive<u32> = 2..=10;

/// A loaded pack.
pub struct Pack {
    /// Its name and the SHA-256 of its file.
    pub(crate) id: PackId,
    /// The kind of data it was trained on (`text`, `exe`, ...).
    pub(crate) kind: String,
    /// Where its training data came from.
    pub(crate) description: String,
    /// The context-mixing configuration (serialised, without a pack) whose predictor it starts.
    pub(crate) config: Vec<u8>,
    /// The sizes of its tables.
    pub(crate) geometry: Geometry,
    /// The predictor's learnt state.
    pub(crate) state: State,
    /// A pre-trained network whose predictions the blocks that start from the pack mix in
    /// (tensors named `frozen.*`).
    pub(crate) network: Option<Arc<Frozen>>,
    /// The built-in pack whose tables (`BASE_TENSORS`) this one shares, if any.
    pub(crate) base: Option<PackId>,
}

/// The tensors a pack with a base takes from it: those that depend on the data alone (the
/// hashed contexts' bit histories, the dense counters, the history), and the two large
/// probability maps, so that a pack for another level or with a network adds only what
/// depends on its model.
const BASE_TENSORS: [&str; 8] = [
    "slots", "tiles", "t0", "t1", "tm", "apm_b", "apm_c", "history",
];

/// Names of a pack's network tensors start with this.
const NETWORK_PREFIX: &str = "frozen.";

impl State {
    /// Bytes its tables hold.
    fn bytes(&self) -> u64 {
        let mixers: usize = self
            .mixers
            .iter()
            .map(|(w, u)| 4 * (w.len() + u.len()))
            .sum();
        let apms: usize = self.apms.iter().map(|a| 2 * a.len()).sum();
        (self.slots.len()
            + self.tiles.len()
            + 4 * (self.maps.len() + self.t0.len() + self.t1.len() + self.tm.len())
            + mixers
            + apms
            + 4 * (self.chain.len() + self.net.len())
            + self.history.len()) as u64
    }
}

impl Pack {
    /// Bytes it holds in memory.
    pub fn bytes(&self) -> u64 {
        let strings = self.config.len() + self.kind.len() + self.description.len();
        let network = self.network.as_ref().map_or(0, |n| n.bytes());
        self.state.bytes() + network + strings as u64
    }

    /// Its name, as archives that need it record it.
    pub fn name(&self) -> &str {
        &self.id.name
    }

    /// The SHA-256 of its file in lowercase hex, as archives that need it record it.
    pub fn sha256_hex(&self) -> String {
        self.id.hex()
    }

    /// The kind of data it was trained on (`text`, `exe`, ...).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// Where its training data came from.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The built-in pack whose tables it shares, if any.
    pub fn base(&self) -> Option<&PackId> {
        self.base.as_ref()
    }

    /// Bytes of training data it keeps as history.
    pub fn history_len(&self) -> usize {
        self.state.history.len()
    }
}

impl fmt::Debug for Pack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.id, f)
    }
}

/// Builds a metadata map of whatever map type `safetensors::serialize` takes.
fn metadata<M: Default + Extend<(String, String)>>(pairs: Vec<(String, String)>) -> M {
    let mut m = M::default();
    m.extend(pairs);
    m
}

fn le_bytes<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

fn from_le<T, const N: usize>(b: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
    b.chunks_exact(N)
        .map(|c| f(c.try_into().unwrap_or([0; N])))
        .collect()
}

/// `file` with its JSON header's keys in sorted order (safetensors writes them in hash map
/// order, which changes from run to run), so that the same training gives the same bytes.
fn canonical(file: &[u8]) -> Result<Vec<u8>> {
    let bad = || Error::BadPack("unreadable header".into());
    let n = u64::from_le_bytes(
        file.get(..8)
            .ok_or_else(bad)?
            .try_into()
            .map_err(|_| bad())?,
    );
    let end = usize::try_from(n)
        .ok()
        .and_then(|n| n.checked_add(8))
        .ok_or_else(bad)?;
    let header: serde_json::Value =
        serde_json::from_slice(file.get(8..end).ok_or_else(bad)?).map_err(|_| bad())?;
    // serde_json's maps are ordered by key.
    let mut json = serde_json::to_vec(&header).map_err(|_| bad())?;
    while !json.len().is_multiple_of(8) {
        json.push(b' ');
    }
    let mut out = Vec::with_capacity(file.len());
    out.extend_from_slice(&(json.len() as u64).to_le_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(&file[end..]);
    Ok(out)
}

const MIXER_NAMES: [&str; 5] = ["mix_a", "mix_b", "mix_c", "mix_d", "mix_e"];
const APM_NAMES: [&str; 3] = ["apm_a", "apm_b", "apm_c"];

impl Pack {
    /// Serialises a pack file; returns its bytes (the id's hash is of these bytes). With a
    /// base, the tensors it shares (`BASE_TENSORS`) are left out.
    pub fn to_file(label: &Label, state: &State, network: Option<&[u8]>) -> Result<Vec<u8>> {
        let Label {
            name,
            kind,
            description,
            config,
            geometry,
            base,
        } = label;
        let bad = |e: safetensors::SafeTensorError| Error::InvalidOption(format!("pack: {e}"));
        let u32s = |n: &str, v: &[u32]| (n.to_string(), Dtype::U32, le_bytes(v, u32::to_le_bytes));
        let f32s = |n: &str, v: &[f32]| (n.to_string(), Dtype::F32, le_bytes(v, f32::to_le_bytes));
        let mut owned: Vec<(String, Dtype, Vec<u8>)> = vec![
            ("slots".into(), Dtype::U8, state.slots.clone()),
            ("tiles".into(), Dtype::U8, state.tiles.clone()),
            u32s("maps", &state.maps),
            u32s("t0", &state.t0),
            u32s("t1", &state.t1),
            u32s("tm", &state.tm),
            f32s("chain", &state.chain),
            f32s("net", &state.net),
            ("history".into(), Dtype::U8, state.history.clone()),
        ];
        for (n, (w, uses)) in MIXER_NAMES.iter().zip(&state.mixers) {
            owned.push(f32s(n, w));
            owned.push(u32s(&format!("{n}_uses"), uses));
        }
        for (n, t) in APM_NAMES.iter().zip(&state.apms) {
            owned.push((n.to_string(), Dtype::U16, le_bytes(t, u16::to_le_bytes)));
        }
        if base.is_some() {
            owned.retain(|(n, _, _)| !BASE_TENSORS.contains(&n.as_str()));
        }
        let mut shaped: Vec<crate::codecs::net::frozen::Tensor> = owned
            .into_iter()
            .map(|(n, d, b)| {
                let shape = vec![b.len() / d.bitsize().div_ceil(8).max(1)];
                (n, d, shape, b)
            })
            .collect();
        if let Some(file) = network {
            shaped.extend(crate::codecs::net::frozen::tensors(file, NETWORK_PREFIX)?);
        }
        let views = shaped
            .iter()
            .map(|(n, d, shape, b)| {
                safetensors::tensor::TensorView::new(*d, shape.clone(), b).map(|v| (n.clone(), v))
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(bad)?;
        let mut meta = vec![
            ("format".into(), "sep-pack".into()),
            ("version".into(), "1".into()),
            ("name".into(), name.to_string()),
            ("type".into(), kind.to_string()),
            ("description".into(), description.to_string()),
            ("config".into(), hex(config)),
            ("slots_log".into(), geometry.slots_log.to_string()),
            ("order2_bits".into(), geometry.order2_bits.to_string()),
            ("sep_version".into(), env!("CARGO_PKG_VERSION").into()),
        ];
        if let Some(b) = base {
            meta.push(("base".into(), b.name.clone()));
            meta.push(("base_sha256".into(), b.hex()));
        }
        let file = safetensors::serialize(views, Some(metadata(meta))).map_err(bad)?;
        canonical(&file)
    }

    /// Parses a pack file (whose base, if it names one, must be a built-in pack). Shapes are
    /// checked against the configuration when a block starts from the pack
    /// (`Predictor::new_in`), not here.
    pub fn from_file(bytes: &[u8]) -> Result<Pack> {
        Self::parse(bytes, Sha256::digest(bytes).into(), |id| {
            builtin_of(id).ok()?
        })
    }

    /// `from_file` of a file whose SHA-256 is `sha256`, its base found by `base`.
    fn parse(
        bytes: &[u8],
        sha256: [u8; 32],
        base: impl FnOnce(&PackId) -> Option<Arc<Pack>>,
    ) -> Result<Pack> {
        let bad = |what: String| Error::BadPack(what);
        let st = SafeTensors::deserialize(bytes).map_err(|e| bad(format!("not a pack: {e}")))?;
        let (_, header) =
            SafeTensors::read_metadata(bytes).map_err(|e| bad(format!("not a pack: {e}")))?;
        let meta = header.metadata().as_ref();
        let get = |k: &str| -> Result<String> {
            meta.and_then(|m| m.get(k))
                .cloned()
                .ok_or_else(|| bad(format!("no '{k}' in its metadata")))
        };
        if get("format")? != "sep-pack" {
            return Err(bad("not a sep pack".into()));
        }
        if get("version")? != "1" {
            return Err(bad(format!(
                "pack version {} (this build reads 1)",
                get("version")?
            )));
        }
        let name = get("name")?;
        if !name_valid(&name) {
            return Err(bad(format!(
                "name must be 1..={NAME_MAX} bytes, no control character"
            )));
        }
        let config = unhex(&get("config")?).ok_or_else(|| bad("bad config".into()))?;
        let num = |k: &str, range: std::ops::RangeInclusive<u32>| -> Result<u32> {
            get(k)?
                .parse()
                .ok()
                .filter(|v| range.contains(v))
                .ok_or_else(|| bad(format!("'{k}' out of range")))
        };
        let geometry = Geometry {
            slots_log: num("slots_log", SLOTS_LOG)?,
            order2_bits: num("order2_bits", ORDER2_BITS)?,
        };
        let base = match meta.and_then(|m| m.get("base")) {
            None => None,
            Some(base_name) => {
                let id = PackId {
                    name: base_name.clone(),
                    sha256: unhex(&get("base_sha256")?)
                        .and_then(|h| <[u8; 32]>::try_from(h).ok())
                        .ok_or_else(|| bad("bad base_sha256".into()))?,
                };
                let found = base(&id).ok_or_else(|| {
                    bad(format!(
                        "it shares the tables of pack {id}, which is not built into this sep"
                    ))
                })?;
                if found.geometry != geometry {
                    return Err(bad(format!("its table sizes are not its base's ({id})")));
                }
                Some(found)
            }
        };
        let base_state = base.as_ref().map(|b| &b.state);
        // A base's tensor comes from the base, whatever the file holds under its name.
        let shared = |n: &str| base_state.filter(|_| BASE_TENSORS.contains(&n));
        let raw = |n: &str, d: Dtype| -> Result<&[u8]> {
            let t = st.tensor(n).map_err(|_| bad(format!("no tensor '{n}'")))?;
            if t.dtype() != d {
                return Err(bad(format!("tensor '{n}' is not {d:?}")));
            }
            Ok(t.data())
        };
        let u32s = |n: &str| raw(n, Dtype::U32).map(|b| from_le(b, u32::from_le_bytes));
        let f32s = |n: &str| raw(n, Dtype::F32).map(|b| from_le(b, f32::from_le_bytes));
        let mut mixers: [(Vec<f32>, Vec<u32>); 5] = Default::default();
        for (n, m) in MIXER_NAMES.iter().zip(&mut mixers) {
            *m = (f32s(n)?, u32s(&format!("{n}_uses"))?);
        }
        let mut apms: [Vec<u16>; 3] = Default::default();
        for (i, (n, t)) in APM_NAMES.iter().zip(&mut apms).enumerate() {
            *t = match shared(n) {
                Some(b) => b.apms[i].clone(),
                None => from_le(raw(n, Dtype::U16)?, u16::from_le_bytes),
            };
        }
        let bytes_of = |n: &str| -> Result<Vec<u8>> {
            match shared(n) {
                Some(b) if n == "slots" => Ok(b.slots.clone()),
                Some(b) if n == "tiles" => Ok(b.tiles.clone()),
                Some(b) => Ok(b.history.clone()),
                // Packs written before histories existed have none.
                None if n == "history" && st.tensor(n).is_err() => Ok(Vec::new()),
                None => raw(n, Dtype::U8).map(<[u8]>::to_vec),
            }
        };
        let counters = |n: &str| -> Result<Vec<u32>> {
            match shared(n) {
                Some(b) if n == "t0" => Ok(b.t0.clone()),
                Some(b) if n == "t1" => Ok(b.t1.clone()),
                Some(b) => Ok(b.tm.clone()),
                None => u32s(n),
            }
        };
        let state = State {
            slots: bytes_of("slots")?,
            tiles: bytes_of("tiles")?,
            maps: u32s("maps")?,
            t0: counters("t0")?,
            t1: counters("t1")?,
            tm: counters("tm")?,
            mixers,
            apms,
            chain: f32s("chain")?,
            net: f32s("net")?,
            history: bytes_of("history")?,
        };
        if state.history.len() > HISTORY_MAX || !state.history.len().is_multiple_of(HISTORY_ALIGN) {
            return Err(bad(format!(
                "its history must be a multiple of {HISTORY_ALIGN} bytes up to {HISTORY_MAX}"
            )));
        }
        // Any tensor of the network's names makes the pack carry one (or be refused).
        let network = match st.names().iter().any(|n| n.starts_with(NETWORK_PREFIX)) {
            true => Some(Arc::new(Frozen::from_tensors(&st, NETWORK_PREFIX)?)),
            false => None,
        };
        Ok(Pack {
            id: PackId { name, sha256 },
            kind: get("type")?,
            description: get("description").unwrap_or_default(),
            config,
            geometry,
            state,
            network,
            base: base.map(|b| b.id.clone()),
        })
    }
}

/// What a pack file says of itself besides its state (`Pack::to_file`).
pub struct Label<'a> {
    pub name: &'a str,
    pub kind: &'a str,
    pub description: &'a str,
    /// The configuration it fits (`CmConfig::pack_key`'s bytes).
    pub config: &'a [u8],
    pub geometry: Geometry,
    /// The built-in pack whose tables it shares, if any.
    pub base: Option<&'a PackId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "builtin-pack")]
    #[test]
    fn the_builtin_packs_have_their_recorded_hashes() {
        let packs = builtins().unwrap();
        assert_eq!(packs.len(), BUILTINS.len());
        for ((p, _), b) in packs.iter().zip(&BUILTINS) {
            let sha: [u8; 32] = Sha256::digest(b.file).into();
            assert_eq!(
                p.id.sha256, sha,
                "{}: its .sha256 is not its hash",
                p.id.name
            );
        }
        assert_eq!(builtin("text").unwrap().id.name, "text");
        // The level-9 pack shares the text pack's tables and carries a network.
        let text = &packs[0].0;
        let nine = builtin("text9").unwrap();
        assert_eq!(nine.base.as_ref(), Some(&text.id));
        assert!(nine.network.is_some());
        assert!(nine.state.slots == text.state.slots);
        // By name, the current pack; by its id, a superseded one too.
        for (p, current) in &packs {
            assert_eq!(builtin_of(&p.id).unwrap().unwrap().id, p.id);
            if !current {
                assert!(current_ids().all(|id| id != p.id), "{}", p.id.name);
            }
        }
    }

    #[cfg(feature = "builtin-pack")]
    fn current_ids() -> impl Iterator<Item = PackId> {
        current().unwrap().into_iter().map(|p| p.id.clone())
    }

    #[cfg(not(feature = "builtin-pack"))]
    #[test]
    fn a_build_without_the_packs_says_so() {
        assert!(!BUILTIN);
        assert!(builtins().unwrap().is_empty());
        let e = builtin("text").map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("builtin-pack"), "{e}");
    }
}
