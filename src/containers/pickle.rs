//! Reads what a PyTorch checkpoint's pickle says of its tensor storages, without running it.
//!
//! `torch.save` pickles the object with each storage as a persistent id, the tuple
//! `('storage', torch.<Type>Storage, key, location, numel[, view])`; the storage type names the
//! dtype and the key names the bytes (a zip member `data/<key>`, or a place in the legacy
//! stream). This walks the pickle's opcodes (protocols 2 to 5) with a stack of the few kinds of
//! value that matter here and records those tuples; any opcode it does not know ends the walk
//! (the file is then not taken for a checkpoint). Values are shared (`Rc`), so memo lookups cost
//! the same whatever they hold: time and memory stay linear in the pickle's length.

use std::collections::HashMap;
use std::rc::Rc;

/// Longest string kept (storage keys and class names are short).
const MAX_STRING: usize = 256;
/// Longest tuple kept (a persistent id has 5 or 6 items).
const MAX_TUPLE: usize = 8;

#[derive(Clone)]
enum Value {
    Str(Rc<str>),
    Global(Rc<str>),
    Tuple(Rc<[Value]>),
    Mark,
    Other,
}

/// What a pickle holds for sep.
pub struct Pickle {
    /// Offset just past its STOP opcode.
    pub end: usize,
    /// Each persistent id's storage key and storage type (`torch.FloatStorage` as
    /// `FloatStorage`), in the pickle's order.
    pub storages: Vec<(Rc<str>, Rc<str>)>,
    /// Every string of at most `MAX_STRING` bytes, in order (a legacy checkpoint's list of
    /// storage keys).
    pub strings: Vec<Rc<str>>,
}

struct Walk<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Walk<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.data.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn uint(&mut self, n: usize) -> Option<u64> {
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(self.take(n)?);
        Some(u64::from_le_bytes(v))
    }

    fn line(&mut self) -> Option<&'a [u8]> {
        let rest = self.data.get(self.at..)?;
        let n = rest.iter().position(|&b| b == b'\n')?;
        self.at += n + 1;
        Some(&rest[..n])
    }

    /// A string (or bytes) value of `n` bytes.
    fn text(&mut self, n: u64) -> Option<Value> {
        let b = self.take(usize::try_from(n).ok()?)?;
        Some(
            match (b.len() <= MAX_STRING)
                .then(|| std::str::from_utf8(b).ok())
                .flatten()
            {
                Some(s) => Value::Str(s.into()),
                None => Value::Other,
            },
        )
    }
}

/// Pops down to the last mark; `None` if there is none.
fn pop_mark(stack: &mut Vec<Value>) -> Option<Vec<Value>> {
    let m = stack.iter().rposition(|v| matches!(v, Value::Mark))?;
    let items = stack.split_off(m + 1);
    stack.pop();
    Some(items)
}

fn tuple(items: Vec<Value>) -> Value {
    match items.len() <= MAX_TUPLE {
        true => Value::Tuple(items.into()),
        false => Value::Other,
    }
}

/// Walks the pickle that starts at `data[start..]`; `None` if it is not one this reads.
pub fn walk(data: &[u8], start: usize) -> Option<Pickle> {
    let mut w = Walk { data, at: start };
    let mut stack: Vec<Value> = Vec::new();
    let mut memo: HashMap<u64, Value> = HashMap::new();
    let mut out = Pickle {
        end: 0,
        storages: Vec::new(),
        strings: Vec::new(),
    };
    loop {
        let op = *w.take(1)?.first()?;
        let pushed = match op {
            0x80 => {
                // PROTO: 2 to 5.
                if !(2..=5).contains(&w.uint(1)?) {
                    return None;
                }
                None
            }
            0x95 => {
                w.take(8)?; // FRAME
                None
            }
            b'.' => {
                out.end = w.at;
                return Some(out);
            }
            b'c' => {
                let module = w.line()?;
                let name = w.line()?;
                let full = format!(
                    "{}.{}",
                    std::str::from_utf8(module).ok()?,
                    std::str::from_utf8(name).ok()?
                );
                Some(Value::Global(full.into()))
            }
            0x93 => {
                // STACK_GLOBAL: module and name strings.
                let name = stack.pop()?;
                let module = stack.pop()?;
                match (module, name) {
                    (Value::Str(m), Value::Str(n)) => {
                        Some(Value::Global(format!("{m}.{n}").into()))
                    }
                    _ => Some(Value::Other),
                }
            }
            b'X' | b'T' | b'B' => {
                let n = w.uint(4)?;
                Some(w.text(n)?)
            }
            0x8c | b'U' | b'C' => {
                let n = w.uint(1)?;
                Some(w.text(n)?)
            }
            0x8d | 0x8e | 0x96 => {
                let n = w.uint(8)?;
                Some(w.text(n)?)
            }
            // Numbers: BININT, BININT1, BININT2, BINFLOAT, LONG1, LONG4.
            b'J' | b'K' | b'M' | b'G' => {
                w.take(match op {
                    b'J' => 4,
                    b'K' => 1,
                    b'M' => 2,
                    _ => 8,
                })?;
                Some(Value::Other)
            }
            0x8a | 0x8b => {
                let n = w.uint(if op == 0x8a { 1 } else { 4 })?;
                w.take(usize::try_from(n).ok()?)?;
                Some(Value::Other)
            }
            b'N' | 0x88 | 0x89 | b')' | b']' | b'}' | 0x8f => Some(Value::Other),
            b'(' => Some(Value::Mark),
            b't' => Some(tuple(pop_mark(&mut stack)?)),
            0x85..=0x87 => {
                let n = (op - 0x84) as usize;
                if stack.len() < n {
                    return None;
                }
                let items = stack.split_off(stack.len() - n);
                Some(tuple(items))
            }
            b'l' | b'd' | 0x91 => {
                pop_mark(&mut stack)?;
                Some(Value::Other)
            }
            b'a' => {
                stack.pop()?;
                None
            }
            b's' => {
                stack.pop()?;
                stack.pop()?;
                None
            }
            b'e' | b'u' | 0x90 => {
                pop_mark(&mut stack)?;
                None
            }
            b'b' => {
                stack.pop()?;
                None
            }
            b'R' | 0x81 => {
                stack.pop()?;
                stack.pop()?;
                Some(Value::Other)
            }
            0x92 => {
                for _ in 0..3 {
                    stack.pop()?;
                }
                Some(Value::Other)
            }
            b'q' | b'r' => {
                let i = w.uint(if op == b'q' { 1 } else { 4 })?;
                memo.insert(i, stack.last()?.clone());
                None
            }
            0x94 => {
                let i = memo.len() as u64;
                memo.insert(i, stack.last()?.clone());
                None
            }
            b'h' | b'j' => {
                let i = w.uint(if op == b'h' { 1 } else { 4 })?;
                Some(memo.get(&i)?.clone())
            }
            b'Q' => {
                if let Value::Tuple(t) = stack.pop()? {
                    if let [Value::Str(tag), Value::Global(class), Value::Str(key), ..] = &t[..] {
                        if &**tag == "storage" {
                            let class = class.strip_prefix("torch.").unwrap_or(class);
                            out.storages.push((key.clone(), class.into()));
                        }
                    }
                }
                Some(Value::Other)
            }
            b'0' => {
                stack.pop()?;
                None
            }
            b'1' => {
                pop_mark(&mut stack)?;
                None
            }
            b'2' => Some(stack.last()?.clone()),
            _ => return None,
        };
        if let Some(v) = pushed {
            if let Value::Str(s) = &v {
                out.strings.push(s.clone());
            }
            stack.push(v);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// What `torch.save` writes for `{'w': tensor}` (protocol 2), by hand.
    pub(crate) fn state_dict(items: &[(&str, &str, &str)]) -> Vec<u8> {
        let mut p = vec![0x80, 2, b'}', b'q', 0, b'('];
        let s = |p: &mut Vec<u8>, v: &str| {
            p.push(b'X');
            p.extend_from_slice(&(v.len() as u32).to_le_bytes());
            p.extend_from_slice(v.as_bytes());
        };
        let mut memo: Vec<&str> = Vec::new();
        for (name, class, key) in items {
            s(&mut p, name);
            p.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n");
            p.push(b'(');
            // The persistent id; a class comes from the memo after its first use.
            p.push(b'(');
            s(&mut p, "storage");
            match memo.iter().position(|c| c == class) {
                Some(i) => p.extend_from_slice(&[b'h', i as u8 + 1]),
                None => {
                    p.extend_from_slice(format!("ctorch\n{class}\n").as_bytes());
                    memo.push(class);
                    p.extend_from_slice(&[b'q', memo.len() as u8]);
                }
            }
            s(&mut p, key);
            s(&mut p, "cpu");
            p.extend_from_slice(&[b'M', 0x10, 0x27]);
            p.extend_from_slice(b"tQ");
            p.extend_from_slice(&[b'K', 0, b'M', 0x10, 0x27, 0x85, b'K', 1, 0x85, 0x89]);
            p.extend_from_slice(b"ccollections\nOrderedDict\n)R");
            p.extend_from_slice(b"tR");
        }
        p.extend_from_slice(b"u.");
        p
    }

    #[test]
    fn storages_and_their_types_are_read() {
        let p = state_dict(&[("a", "HalfStorage", "0"), ("b", "HalfStorage", "1")]);
        let w = walk(&p, 0).unwrap();
        assert_eq!(w.end, p.len());
        let got: Vec<(String, String)> = w
            .storages
            .iter()
            .map(|(k, c)| (k.to_string(), c.to_string()))
            .collect();
        assert_eq!(
            got,
            [
                ("0".into(), "HalfStorage".into()),
                ("1".into(), "HalfStorage".into())
            ]
        );
        // Cut anywhere, it is not a pickle.
        for cut in 0..p.len() {
            assert!(walk(&p[..cut], 0).is_none(), "cut at {cut}");
        }
        // A memo reference to nothing, an unknown opcode.
        let mut bad = p.clone();
        let at = bad.windows(2).position(|w| w == [b'h', 1]).unwrap();
        bad[at + 1] = 9;
        assert!(walk(&bad, 0).is_none());
        assert!(walk(b"\x80\x02\xff.", 0).is_none());
    }
}
