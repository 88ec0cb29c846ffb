//! Which backbone a network is and its shape, as the context-mixing configuration records them.

/// Backbone network of the predictor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backbone {
    /// PAC-style MLP over SEP patch features (the default).
    #[default]
    Pac,
    /// TRACE: causal linear attention over SEP patch tokens, then a feed-forward block.
    Trace,
}

impl Backbone {
    /// Name used on the command line and by `sep info`.
    pub fn name(self) -> &'static str {
        match self {
            Backbone::Pac => "pac",
            Backbone::Trace => "trace",
        }
    }
}

/// Shape of the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetConfig {
    /// The backbone.
    pub backbone: Backbone,
    /// Hidden units of the MLP backbone, or the model width of the transformer (0 disables
    /// the network).
    pub hidden: u16,
    /// Adam learning rate, in 1e-5 units.
    pub lr: u16,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            backbone: Backbone::Pac,
            hidden: 32,
            lr: 500,
        }
    }
}
