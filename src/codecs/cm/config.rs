//! The context-mixing codec's configuration as recorded in the archive header.

use super::experts::CATALOGUE_LEN;
use super::pack::{Pack, PackId, NAME_MAX};
use super::predictor::{Params, Predictor, DEFAULT_CONTEXTS};
use crate::codecs::net::NetConfig;
use crate::error::{Error, Result};
use std::sync::Arc;

/// Share of bytes in a text (printable ASCII, tabs, line ends, and the bytes of well-formed
/// UTF-8 sequences) at or above which data looks like text: binaries measured here stay under
/// three quarters, a terminal transcript with escape sequences is above nine tenths.
const TEXT_MIN: f64 = 0.85;

/// Whether `data` looks like text, for the choice of a text pack. Bytes of 128 or more count
/// only within UTF-8 sequences: a raster of light pixels (runs of 255) is no text.
pub fn looks_like_text(data: &[u8]) -> bool {
    let texty = data
        .utf8_chunks()
        .flat_map(|chunk| chunk.valid().bytes())
        .filter(|&b| matches!(b, b'\t' | b'\n' | b'\r' | 0x20..=0x7e | 0x80..))
        .count();
    !data.is_empty() && texty as f64 >= TEXT_MIN * data.len() as f64
}

/// The context-mixing codec's configuration: its level, parameters and pack, serialised
/// into the archive header.
#[derive(Clone, Debug)]
pub struct CmConfig {
    /// The compression level the model was chosen by (shown by `sep info`).
    pub level: u8,
    /// Lanes, mixer, network and context parameters.
    pub params: Params,
    /// The pack the blocks' models start from, if any (`attach`).
    pub pack: Option<Arc<Pack>>,
    /// Whether the pack starts only the blocks that look like text (the automatic choice)
    /// rather than every block. Not recorded: each block's payload says whether it started
    /// from the pack.
    pub text_only: bool,
}

impl PartialEq for CmConfig {
    fn eq(&self, o: &Self) -> bool {
        self.level == o.level
            && self.params == o.params
            && self.pack.as_ref().map(|p| &p.id) == o.pack.as_ref().map(|p| &p.id)
    }
}

impl Eq for CmConfig {}

impl Default for CmConfig {
    fn default() -> Self {
        Self::for_level(DEFAULT_LEVEL)
    }
}

/// The level a run compresses at unless told otherwise.
pub const DEFAULT_LEVEL: u8 = 6;
/// Levels, fastest first.
pub const LEVELS: std::ops::RangeInclusive<u8> = 1..=9;

/// Catalogue places (`experts::CATALOGUE`) of each level's contexts, level 1 first.
const LEVEL_CONTEXTS: [&[usize]; 9] = [
    &[0, 1, 2, 6, 12],
    &[0, 1, 2, 3, 4, 6, 7, 9],
    &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12],
    &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15],
    &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16],
    &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17],
    &[
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
    ],
    &[
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
    ],
    &[
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
    ],
];

/// Configuration id of the default level's model (the catalogue's first 18 contexts), which
/// records the parameters only.
const NEURAL_DEFAULT: u8 = 2;
/// Configuration id of any level's model: the level, flags (bit 0: lean, bit 1: fast, bit 2:
/// a pack) and the context mask as well, then the pack's hash and name.
const NEURAL_LEVEL: u8 = 3;
/// Configuration id of a level's own model (`CmConfig::for_level`, other than the default
/// level's): the level and flags (only `FLAG_PACK` and `FLAG_NO_NETWORK`), then the pack's hash
/// and name.
const NEURAL_STANDARD: u8 = 4;
/// Flag bit of `NEURAL_LEVEL`: the model starts from a pack.
const FLAG_PACK: u8 = 4;
/// Flag bit of `NEURAL_LEVEL` that archives of the retired TRACE backbone set.
const FLAG_TRACE: u8 = 8;
/// Flag bit of `NEURAL_LEVEL`: no network runs (`Params::network` false).
const FLAG_NO_NETWORK: u8 = 16;
/// Most lanes an archive may ask for. The encoder writes 1; more lanes batch the network
/// over them, and each lane holds the network's state, so the bound keeps a header's memory
/// and work to what an encoder could ask.
pub const LANES_MAX: u16 = 16;
/// Widest network an archive may ask for (the online MLP's hidden units): the width every
/// level that runs a network writes. A network's work per byte grows with its width squared,
/// so this bounds the decoder's work per output byte to that of the costliest configuration
/// an encoder writes (level 9).
pub const HIDDEN_MAX: u16 = 32;

/// The pack a configuration (`id`, `len` bytes in all) names after its fields (`tail`): none
/// without `FLAG_PACK`, else its hash and name.
fn pack_id(flags: u8, tail: &[u8], id: u8, len: usize) -> Result<Option<PackId>> {
    let bad_name = || Error::Corrupt("bad pack name in the header".into());
    match (flags & FLAG_PACK != 0, tail) {
        (false, []) => Ok(None),
        (true, t) if t.len() > 33 => {
            let (hash, rest) = t.split_at(32);
            let name = &rest[1..];
            if rest[0] as usize != name.len() || name.len() > NAME_MAX {
                return Err(bad_name());
            }
            let name = std::str::from_utf8(name)
                .ok()
                .filter(|n| super::pack::name_valid(n))
                .ok_or_else(bad_name)?;
            Ok(Some(PackId {
                name: name.to_string(),
                sha256: hash.try_into().unwrap_or([0; 32]),
            }))
        }
        _ => Err(Error::Corrupt(format!(
            "unknown context-mixing configuration (id {id}, {len} bytes)"
        ))),
    }
}

impl CmConfig {
    /// The model of compression level `level` (clamped to `LEVELS`).
    pub fn for_level(level: u8) -> Self {
        let level = level.clamp(*LEVELS.start(), *LEVELS.end());
        let mut params = Params {
            contexts: LEVEL_CONTEXTS[level as usize - 1]
                .iter()
                .fold(0, |m, &i| m | 1 << i),
            ..Params::default()
        };
        params.lean = level == 2;
        params.fast = level == 1;
        // The online MLP runs at the highest level only.
        if level == 9 {
            params.net.hidden = NetConfig::default().hidden;
        }
        CmConfig {
            level,
            params,
            pack: None,
            text_only: false,
        }
    }

    /// Whether `pack` was trained for this configuration's model (level, contexts, network).
    pub fn fits(&self, pack: &Pack) -> bool {
        !self.params.fast && pack.config == self.pack_key()
    }

    /// What a pack for this configuration records of it (`Pack::config`): the configuration
    /// without its pack, with its network on (a model without one starts from the same
    /// packs).
    fn pack_key(&self) -> Vec<u8> {
        let mut c = self.without_pack();
        c.params.network = true;
        c.full_bytes()
    }

    /// Whether this is its level's own model (but for the network switched off), which the
    /// archive records by its level alone (`NEURAL_STANDARD`).
    fn standard(&self) -> bool {
        let mut own = CmConfig::for_level(self.level).params;
        own.network = self.params.network;
        self.level != DEFAULT_LEVEL && self.params == own
    }

    /// The configuration a block of `data` is coded with: this one, or without its pack where
    /// the pack starts only blocks that look like text and `data` does not.
    pub fn for_block(&self, data: &[u8]) -> std::borrow::Cow<'_, CmConfig> {
        match self.text_only && !looks_like_text(data) {
            true => std::borrow::Cow::Owned(self.without_pack()),
            false => std::borrow::Cow::Borrowed(self),
        }
    }

    /// This configuration without its pack: every block's model starts fresh.
    pub fn without_pack(&self) -> Self {
        CmConfig {
            pack: None,
            text_only: false,
            ..self.clone()
        }
    }

    /// This configuration with one mixer and one probability map (the lean mixing of level
    /// 2's model), for data whose structure a codec has taken out (the field codec's
    /// residuals).
    pub fn leaned(&self) -> Self {
        let mut c = self.clone();
        c.params.lean = true;
        c
    }

    /// This configuration with every block's model starting from `pack`, which must have been
    /// trained for it.
    pub fn attach(mut self, pack: Arc<Pack>) -> Result<Self> {
        self.pack = None;
        if self.params.fast {
            return Err(Error::BadPack(format!(
                "level {} (the fast predictor) takes no pack",
                self.level
            )));
        }
        if pack.config != self.pack_key() {
            return Err(Error::BadPack(format!(
                "{} was trained for another model (level, contexts or network) than level {}'s",
                pack.id, self.level
            )));
        }
        Predictor::check_pack(self.params, &pack)?;
        self.pack = Some(pack);
        Ok(self)
    }

    /// Serialised form stored in the archive header: a level's own model by its level, any
    /// other by its parameters (`full_bytes`).
    pub fn to_bytes(&self) -> Vec<u8> {
        if !self.standard() {
            return self.full_bytes();
        }
        let c = &self.params;
        let pack_flag = if self.pack.is_some() { FLAG_PACK } else { 0 };
        let off_flag = if c.network { 0 } else { FLAG_NO_NETWORK };
        let mut b = vec![NEURAL_STANDARD, self.level, pack_flag | off_flag];
        self.push_pack_id(&mut b);
        b
    }

    /// Appends the pack's hash, name length and name, if there is a pack (what `pack_id`
    /// reads).
    fn push_pack_id(&self, b: &mut Vec<u8>) {
        if let Some(p) = &self.pack {
            b.extend_from_slice(&p.id.sha256);
            b.push(p.id.name.len() as u8);
            b.extend_from_slice(p.id.name.as_bytes());
        }
    }

    /// The serialised form by parameters (ids 2 and 3), which packs also record of the model
    /// they were trained for (`Pack::config`).
    pub fn full_bytes(&self) -> Vec<u8> {
        let c = &self.params;
        let short = self.level == DEFAULT_LEVEL
            && c.contexts == DEFAULT_CONTEXTS
            && !c.lean
            && !c.fast
            && c.network
            && self.pack.is_none();
        let pack_flag = if self.pack.is_some() { FLAG_PACK } else { 0 };
        let off_flag = if c.network { 0 } else { FLAG_NO_NETWORK };
        let flags = c.lean as u8 | (c.fast as u8) << 1 | pack_flag | off_flag;
        let mut b = match short {
            true => vec![NEURAL_DEFAULT],
            false => vec![NEURAL_LEVEL, self.level, flags],
        };
        b.extend_from_slice(&c.max_lanes.to_le_bytes());
        b.extend_from_slice(&c.min_lane.to_le_bytes());
        b.extend_from_slice(&c.mix_lr.to_le_bytes());
        b.extend_from_slice(&c.mix_lr_start.to_le_bytes());
        b.extend_from_slice(&c.net.hidden.to_le_bytes());
        b.extend_from_slice(&c.net.lr.to_le_bytes());
        if !short {
            b.extend_from_slice(&c.contexts.to_le_bytes());
        }
        self.push_pack_id(&mut b);
        b
    }

    /// Parses the serialised form, rejecting unknown flags and bad parameters; returns the
    /// configuration without its pack and the id of the pack it needs, if any (`attach` it).
    pub fn from_bytes(b: &[u8]) -> Result<(Self, Option<PackId>)> {
        let mut pack = None;
        let (level, flags, rest, contexts) = match b {
            [NEURAL_DEFAULT, rest @ ..] if rest.len() == 14 => {
                (DEFAULT_LEVEL, 0, rest, DEFAULT_CONTEXTS)
            }
            [NEURAL_LEVEL, level, flags, rest @ ..] if rest.len() >= 18 => {
                let m = u32::from_le_bytes([rest[14], rest[15], rest[16], rest[17]]);
                pack = pack_id(*flags, &rest[18..], NEURAL_LEVEL, b.len())?;
                (*level, *flags, &rest[..14], m)
            }
            [NEURAL_STANDARD, level, flags, tail @ ..] => {
                let known = FLAG_PACK | FLAG_NO_NETWORK;
                if !LEVELS.contains(level) || *level == DEFAULT_LEVEL || flags & !known != 0 {
                    return Err(Error::Corrupt(
                        "context-mixing configuration out of range".into(),
                    ));
                }
                let pack = pack_id(*flags, tail, NEURAL_STANDARD, b.len())?;
                let mut config = CmConfig::for_level(*level);
                config.params.network = flags & FLAG_NO_NETWORK == 0;
                if config.params.fast && pack.is_some() {
                    return Err(Error::Corrupt(
                        "context-mixing configuration out of range".into(),
                    ));
                }
                return Ok((config, pack));
            }
            [id, ..] => {
                return Err(Error::Corrupt(format!(
                    "unknown context-mixing configuration (id {id}, {} bytes)",
                    b.len()
                )))
            }
            [] => return Err(Error::Corrupt("empty context-mixing configuration".into())),
        };
        if flags & FLAG_TRACE != 0 {
            return Err(Error::Retired("the TRACE network (retired 2026-11-29)"));
        }
        let u16_at = |i: usize| u16::from_le_bytes([rest[i], rest[i + 1]]);
        let c = Params {
            max_lanes: u16_at(0),
            min_lane: u32::from_le_bytes([rest[2], rest[3], rest[4], rest[5]]),
            mix_lr: u16_at(6),
            mix_lr_start: u16_at(8),
            net: NetConfig {
                hidden: u16_at(10),
                lr: u16_at(12),
            },
            network: flags & FLAG_NO_NETWORK == 0,
            contexts,
            lean: flags & 1 != 0,
            fast: flags & 2 != 0,
            default_model: false,
            bilevel: 0,
            wide: false,
        };
        if c.max_lanes == 0
            || c.max_lanes > LANES_MAX
            || c.min_lane == 0
            || c.net.hidden > HIDDEN_MAX
            || !LEVELS.contains(&level)
            || c.contexts == 0
            || c.contexts >> CATALOGUE_LEN != 0
            || flags & !31 != 0
            || flags & 3 == 3
            || (c.fast && pack.is_some())
        {
            return Err(Error::Corrupt(
                "context-mixing configuration out of range".into(),
            ));
        }
        let config = CmConfig {
            level,
            params: c,
            pack: None,
            text_only: false,
        };
        Ok((config, pack))
    }

    /// Short human-readable description.
    pub fn describe(&self) -> String {
        let c = &self.params;
        if c.fast {
            return format!(
                "level {}: the fast predictor, integer mixing of bit histories of {} contexts \
                 (orders, words, columns) and a match model; one lane",
                self.level,
                c.contexts.count_ones()
            );
        }
        let net = match c.net.hidden {
            _ if !c.network => "no network (switched off)".to_string(),
            0 => "no network".to_string(),
            h => format!("backbone pac ({h} hidden)"),
        };
        format!(
            "level {}: {net}; context mixing of bit histories of {} contexts (orders, words, \
             sparse, column) and a match model; lanes <= {}, >= {} bytes each",
            self.level,
            c.contexts.count_ones(),
            c.max_lanes,
            c.min_lane
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_round_trips_and_rejects_unknown() {
        let c = CmConfig::default();
        assert_eq!(
            CmConfig::from_bytes(&c.to_bytes()).unwrap(),
            (c.clone(), None)
        );
        assert!(CmConfig::from_bytes(&[9, 1, 1]).is_err());
        let mut bad = c.to_bytes();
        bad[1] = 0;
        bad[2] = 0;
        assert!(CmConfig::from_bytes(&bad).is_err(), "zero lanes accepted");
        assert!(CmConfig::from_bytes(&[]).is_err());
        for level in LEVELS {
            let c = CmConfig::for_level(level);
            assert_eq!(
                CmConfig::from_bytes(&c.to_bytes()).unwrap(),
                (c.clone(), None)
            );
            // The fastest levels have fewer contexts and are recorded as fast and lean.
            assert_eq!(c.params.fast, level == 1);
            assert_eq!(c.params.lean, level == 2);
        }
        // No configuration costlier than the costliest an encoder writes: every level's
        // network is at most `HIDDEN_MAX` wide and runs on one lane; a wider network, or more
        // lanes than `LANES_MAX`, is refused.
        for level in LEVELS {
            let p = CmConfig::for_level(level).params;
            assert!(p.net.hidden <= HIDDEN_MAX && p.max_lanes <= LANES_MAX);
        }
        let mut wide = CmConfig::for_level(9);
        wide.params.net.hidden = HIDDEN_MAX + 1;
        assert!(
            CmConfig::from_bytes(&wide.to_bytes()).is_err(),
            "a network wider than the widest an encoder writes accepted"
        );
        let mut lanes = CmConfig::for_level(9);
        lanes.params.max_lanes = LANES_MAX;
        assert!(CmConfig::from_bytes(&lanes.to_bytes()).is_ok());
        lanes.params.max_lanes = LANES_MAX + 1;
        assert!(CmConfig::from_bytes(&lanes.to_bytes()).is_err());
        // The retired TRACE network: refused as such.
        for level in [1, 9] {
            let mut trace = CmConfig::for_level(level).full_bytes();
            trace[2] |= FLAG_TRACE;
            assert!(matches!(
                CmConfig::from_bytes(&trace),
                Err(Error::Retired(_))
            ));
        }
        // A model without its network (`--net none`) is recorded as such, at any level, and
        // fits the packs of the model with it.
        for level in 2..=9 {
            let mut c = CmConfig::for_level(level);
            c.params.network = false;
            let (back, _) = CmConfig::from_bytes(&c.to_bytes()).unwrap();
            assert!(!back.params.network && back == c);
            let mut on = c.clone();
            on.params.network = true;
            assert_eq!(c.pack_key(), on.full_bytes());
        }
        let mut bad = CmConfig::for_level(9).to_bytes();
        bad[2] |= 32;
        assert!(
            CmConfig::from_bytes(&bad).is_err(),
            "unknown flag 32 accepted"
        );
        // The default level keeps its short form, so its archives are unchanged.
        assert_eq!(CmConfig::default().to_bytes()[0], NEURAL_DEFAULT);
        let mut bad = CmConfig::for_level(1).to_bytes();
        bad[2] = 3;
        assert!(CmConfig::from_bytes(&bad).is_err(), "unknown flag accepted");
        let mut bad = CmConfig::for_level(1).full_bytes();
        *bad.last_mut().unwrap() = 0x80;
        assert!(
            CmConfig::from_bytes(&bad).is_err(),
            "context past the catalogue"
        );
        assert!(CmConfig::from_bytes(&c.full_bytes()[..5]).is_err());
        // A level's own model is recorded by its level (the default level's keeps its form);
        // the full form still reads.
        for level in LEVELS.filter(|&l| l != DEFAULT_LEVEL) {
            let c = CmConfig::for_level(level);
            assert_eq!(c.to_bytes(), [NEURAL_STANDARD, level, 0]);
            assert_eq!(CmConfig::from_bytes(&c.full_bytes()).unwrap(), (c, None));
        }
        for bad in [
            &[NEURAL_STANDARD, DEFAULT_LEVEL, 0][..],
            &[NEURAL_STANDARD, 0, 0],
            &[NEURAL_STANDARD, 10, 0],
            &[NEURAL_STANDARD, 9, 1],
            &[NEURAL_STANDARD, 9, 0, 0],
            &[NEURAL_STANDARD, 9],
        ] {
            assert!(CmConfig::from_bytes(bad).is_err(), "{bad:?} accepted");
        }
        // The fast predictor takes no pack.
        let mut fast = vec![NEURAL_STANDARD, 1, FLAG_PACK];
        fast.extend_from_slice(&[7; 32]);
        fast.extend_from_slice(b"\x04text");
        assert!(CmConfig::from_bytes(&fast).is_err());
        fast[1] = 9;
        assert!(CmConfig::from_bytes(&fast).is_ok());
    }

    #[test]
    fn text_is_ascii_or_utf8_and_light_pixels_are_not() {
        let prose = "Grüße aus Köln: 北京的天气很好, naïve café.\n".repeat(50);
        assert!(looks_like_text(prose.as_bytes()));
        // Latin-1 text: its few accented bytes are not UTF-8, the rest carries it.
        let latin1: Vec<u8> = b"Le caf\xe9 est ferm\xe9 le dimanche matin.\n".repeat(50);
        assert!(looks_like_text(&latin1));
        // Rows of an RGB screenshot: white runs with dark pixels, every byte printable or 255.
        let row: Vec<u8> = (0..300u32)
            .flat_map(|x| match x % 37 {
                0..=2 => [0x33, 0x44, 0x55],
                _ => [0xff, 0xff, 0xff],
            })
            .collect();
        assert!(!looks_like_text(&row.repeat(20)));
        assert!(!looks_like_text(&[]));
    }

    #[test]
    fn a_pack_name_with_a_control_character_is_refused() {
        // The header of a level-9 model naming a pack: its hash, the name's length, the name.
        let mut b = CmConfig::for_level(9).to_bytes();
        b[2] |= FLAG_PACK;
        b.extend_from_slice(&[7; 32]);
        for (name, ok) in [
            (&b"text"[..], true),
            (b"te\x1b[2Jxt", false),
            (b"a\nb", false),
        ] {
            let mut h = b.clone();
            h.push(name.len() as u8);
            h.extend_from_slice(name);
            assert_eq!(CmConfig::from_bytes(&h).is_ok(), ok, "{name:?}");
        }
    }
}
