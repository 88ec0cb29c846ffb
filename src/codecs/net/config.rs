//! The online network's shape, as the context-mixing configuration records it.

/// Shape of the online network (the MLP, `pac`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetConfig {
    /// Hidden units (0 disables the network).
    pub hidden: u16,
    /// Adam learning rate, in 1e-5 units.
    pub lr: u16,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            hidden: 32,
            lr: 500,
        }
    }
}
