//! What the composite's tests share.

use cluster::DataNodeSettings;
use node::DataNodeComposite;
use protocol::identity::ClusterSecret;
use protocol::{Address, NodeId};
use transaction::{CoordinatorConfig, QueryHandler};

/// Data node `node` (incarnation 100) of a sandbox cluster of two data
/// nodes, listening on `port`, knowing `secret`; not started.
pub fn composite(node: NodeId, port: u16, secret: ClusterSecret) -> DataNodeComposite {
    let text = config::sandbox_config_text("", 2, 2, 1186, 16 << 20);
    let config = config::parse(&text, "config.ini").expect("a valid config");
    let settings = DataNodeSettings::from_config(&config, node, 100).expect("configured");
    let engine = storage::engine::EngineConfig {
        data_memory_bytes: 4 << 20,
        ..Default::default()
    };
    DataNodeComposite::new(
        settings,
        0,
        QueryHandler::new(node, engine).expect("engine"),
        CoordinatorConfig::default(),
        Address {
            node,
            host: "127.0.0.1".into(),
            port,
        },
        secret,
        cluster::epochs::EpochConfig::from_config(config.data_node(node).expect("configured")),
    )
}
