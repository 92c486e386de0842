//! Tests of partition maps: partition counts for every PARTITION_BALANCE,
//! even spreading of primaries over nodes and LDM threads, replica sets that
//! are exactly one node group, fully replicated copies, explicit PARTITIONS,
//! NDB_TABLE comment parsing, the hash map of buckets, golden values for
//! the hash-to-partition mapping that decides where rows live, and
//! distribution keys (`PARTITION BY KEY`): their validation and that rows
//! agreeing on them share a partition.

use proptest::prelude::*;
use schema::distribution::{
    ClusterShape, HASH_MAP_BUCKETS, NodeId, PARTITIONS_MAX, PartitionBalance, PartitionMap,
    TableOptions, bucket_of_hash, distribution_key, distribution_key_columns,
    encode_distribution_key_from_attrinfo, encode_distribution_key_from_row,
    encode_distribution_key_from_values,
};
use schema::key::{encode_attrinfo_key, encode_row_key, key_hash};
use schema::row::RowBuilder;
use schema::{
    AttrInfoWriter, Collation, ColumnDef, ColumnId, ColumnType, ErrorCode, RowView, TableDef, Value,
};
use std::collections::BTreeMap;

fn shape(node_groups: &[&[NodeId]], ldm_threads: u32) -> ClusterShape {
    let shape = ClusterShape {
        node_groups: node_groups.iter().map(|group| group.to_vec()).collect(),
        ldm_threads,
    };
    shape.validate().unwrap();
    shape
}

fn with_balance(partition_balance: PartitionBalance) -> TableOptions {
    TableOptions {
        partition_balance,
        ..TableOptions::default()
    }
}

fn map(shape: &ClusterShape, options: &TableOptions) -> PartitionMap {
    PartitionMap::compute(shape, options).unwrap()
}

/// The shapes the brief names: 2 nodes / 1 group / 1 LDM, 2 nodes / 1
/// group / 2 LDM, 4 nodes / 2 groups / 2 LDM, and 3 replicas.
fn named_shapes() -> Vec<ClusterShape> {
    vec![
        shape(&[&[1, 2]], 1),
        shape(&[&[1, 2]], 2),
        shape(&[&[1, 2], &[3, 4]], 2),
        shape(&[&[1, 2, 3], &[4, 5, 6]], 4),
    ]
}

#[test]
fn partition_counts_follow_the_balance() {
    use PartitionBalance::*;
    // Expected counts, one row per named shape, columns in this balance order.
    let balances = [
        ForRpByLdm,
        ForRaByLdm,
        ForRpByNode,
        ForRaByNode,
        ForRaByLdmX2,
        ForRaByLdmX3,
        ForRaByLdmX4,
    ];
    let expected: [[u32; 7]; 4] = [
        [2, 1, 2, 1, 2, 3, 4],
        [4, 2, 2, 1, 4, 6, 8],
        [8, 4, 4, 2, 8, 12, 16],
        [24, 8, 6, 2, 16, 24, 32],
    ];
    // Fully replicated: counted as if there were one node group.
    let expected_fully_replicated: [[u32; 7]; 4] = [
        [2, 1, 2, 1, 2, 3, 4],
        [4, 2, 2, 1, 4, 6, 8],
        [4, 2, 2, 1, 4, 6, 8],
        [12, 4, 3, 1, 8, 12, 16],
    ];
    for (shape_index, shape) in named_shapes().iter().enumerate() {
        for (balance_index, &balance) in balances.iter().enumerate() {
            let options = with_balance(balance);
            assert_eq!(
                map(shape, &options).partition_count(),
                expected[shape_index][balance_index],
                "{shape:?} {}",
                balance.name()
            );
            let fully = TableOptions {
                fully_replicated: true,
                ..options
            };
            assert_eq!(
                map(shape, &fully).partition_count(),
                expected_fully_replicated[shape_index][balance_index],
                "{shape:?} {} fully replicated",
                balance.name()
            );
        }
    }
}

#[test]
fn the_default_is_for_rp_by_ldm_with_read_backup() {
    let options = TableOptions::default();
    assert_eq!(options.partition_balance, PartitionBalance::ForRpByLdm);
    assert!(options.read_backup);
    assert!(!options.fully_replicated);
    assert!(!options.nologging);
    assert_eq!(options.partitions, None);
}

#[test]
fn primaries_rotate_within_a_group() {
    let options = TableOptions {
        partitions: Some(4),
        ..TableOptions::default()
    };
    let map = map(&shape(&[&[7, 9]], 1), &options);
    let primaries: Vec<NodeId> = (0..4).map(|p| map.partition(p).primary()).collect();
    assert_eq!(primaries, [7, 9, 7, 9]);
    assert_eq!(map.partition(1).replicas, [9, 7]);
    assert_eq!(map.partition(1).backups(), [7]);
}

#[test]
fn partitions_alternate_over_node_groups() {
    let map = map(&shape(&[&[1, 2], &[3, 4]], 2), &TableOptions::default());
    let groups: Vec<u16> = (0..8).map(|p| map.partition(p).node_group).collect();
    assert_eq!(groups, [0, 1, 0, 1, 0, 1, 0, 1]);
}

/// Primary partitions per node and per (node, LDM thread), over every node
/// and every LDM thread of the shape (zero counts included).
fn primary_counts(
    shape: &ClusterShape,
    map: &PartitionMap,
) -> (BTreeMap<NodeId, u32>, BTreeMap<(NodeId, u32), u32>) {
    let mut per_node = BTreeMap::new();
    let mut per_node_ldm = BTreeMap::new();
    for &node in shape.node_groups.iter().flatten() {
        per_node.insert(node, 0);
        for ldm in 0..shape.ldm_threads {
            per_node_ldm.insert((node, ldm), 0);
        }
    }
    for partition in 0..map.partition_count() {
        for copy in map.copies(partition) {
            *per_node.get_mut(&copy.primary()).unwrap() += 1;
            *per_node_ldm.get_mut(&(copy.primary(), copy.ldm)).unwrap() += 1;
        }
    }
    (per_node, per_node_ldm)
}

fn spread<K>(counts: &BTreeMap<K, u32>) -> u32 {
    counts.values().max().unwrap() - counts.values().min().unwrap()
}

#[test]
fn primaries_spread_evenly_over_nodes_and_ldm_threads() {
    for shape in named_shapes() {
        for balance in PartitionBalance::ALL {
            for fully_replicated in [false, true] {
                let options = TableOptions {
                    partition_balance: balance,
                    fully_replicated,
                    ..TableOptions::default()
                };
                let map = map(&shape, &options);
                let (per_node, per_node_ldm) = primary_counts(&shape, &map);
                let context = format!("{shape:?} {} {fully_replicated}", balance.name());
                assert!(spread(&per_node) <= 1, "{context}: {per_node:?}");
                assert!(spread(&per_node_ldm) <= 1, "{context}: {per_node_ldm:?}");
            }
        }
    }
}

#[test]
fn for_rp_by_ldm_makes_every_ldm_thread_primary_exactly_once() {
    for shape in named_shapes() {
        let map = map(&shape, &TableOptions::default());
        let (_, per_node_ldm) = primary_counts(&shape, &map);
        assert!(per_node_ldm.values().all(|&count| count == 1), "{shape:?}");
    }
}

#[test]
fn for_ra_by_ldm_puts_one_partition_on_every_ldm_thread() {
    for shape in named_shapes() {
        let map = map(&shape, &with_balance(PartitionBalance::ForRaByLdm));
        let mut fragments: BTreeMap<(NodeId, u32), u32> = BTreeMap::new();
        for partition in 0..map.partition_count() {
            let copy = map.partition(partition);
            for &node in &copy.replicas {
                *fragments.entry((node, copy.ldm)).or_default() += 1;
            }
        }
        assert_eq!(
            fragments.len(),
            shape.data_nodes() * shape.ldm_threads as usize,
            "{shape:?}"
        );
        assert!(fragments.values().all(|&count| count == 1), "{shape:?}");
    }
}

/// Every copy's replicas are exactly its node group's nodes, primary first,
/// then the group's order after the primary.
fn assert_replicas_are_one_group(shape: &ClusterShape, map: &PartitionMap) {
    for partition in 0..map.partition_count() {
        for copy in map.copies(partition) {
            let group = &shape.node_groups[usize::from(copy.node_group)];
            let start = group
                .iter()
                .position(|&node| node == copy.primary())
                .expect("the primary is in the partition's node group");
            let expected: Vec<NodeId> = (0..group.len())
                .map(|offset| group[(start + offset) % group.len()])
                .collect();
            assert_eq!(copy.replicas, expected, "partition {partition}");
            assert!(copy.ldm < shape.ldm_threads);
        }
    }
}

#[test]
fn every_replica_set_is_exactly_one_node_group() {
    for shape in named_shapes() {
        for balance in PartitionBalance::ALL {
            assert_replicas_are_one_group(&shape, &map(&shape, &with_balance(balance)));
        }
    }
    let three = map(
        &shape(&[&[1, 2, 3]], 1),
        &with_balance(PartitionBalance::ForRpByNode),
    );
    assert_eq!(three.partition(0).replicas, [1, 2, 3]);
    assert_eq!(three.partition(1).replicas, [2, 3, 1]);
    assert_eq!(three.partition(2).replicas, [3, 1, 2]);
}

#[test]
fn fully_replicated_tables_have_a_copy_on_every_group() {
    let shape = shape(&[&[1, 2], &[3, 4], &[5, 6]], 2);
    let options = TableOptions {
        fully_replicated: true,
        ..TableOptions::default()
    };
    let map = map(&shape, &options);
    assert!(map.fully_replicated());
    assert_eq!(map.partition_count(), 4);
    assert_eq!(map.copies_per_partition(), 3);
    for partition in 0..map.partition_count() {
        let groups: Vec<u16> = map.copies(partition).map(|copy| copy.node_group).collect();
        assert_eq!(groups, [0, 1, 2]);
        assert_eq!(
            map.partition(partition).node_group,
            0,
            "main copy in group 0"
        );
    }
    assert_replicas_are_one_group(&shape, &map);
    // Every node holds every partition, so every read can stay local.
    for node in 1..=6 {
        let held: Vec<u32> = map
            .partitions_on(node)
            .map(|(partition, _)| partition)
            .collect();
        assert_eq!(held, [0, 1, 2, 3], "node {node}");
    }
}

#[test]
fn ordinary_tables_have_one_copy() {
    let map = map(&shape(&[&[1, 2], &[3, 4]], 2), &TableOptions::default());
    assert!(!map.fully_replicated());
    assert_eq!(map.copies_per_partition(), 1);
    for partition in 0..map.partition_count() {
        assert_eq!(map.copies(partition).count(), 1);
        assert_eq!(map.copies(partition).next(), Some(map.partition(partition)));
    }
}

#[test]
fn partitions_on_lists_a_nodes_partitions() {
    let map = map(&shape(&[&[1, 2], &[3, 4]], 1), &TableOptions::default());
    // Partitions 0 and 2 are in group 0 (nodes 1, 2); primaries rotate.
    assert_eq!(
        map.partitions_on(1).collect::<Vec<_>>(),
        [(0, true), (2, false)]
    );
    assert_eq!(
        map.partitions_on(2).collect::<Vec<_>>(),
        [(0, false), (2, true)]
    );
    assert_eq!(
        map.partitions_on(3).collect::<Vec<_>>(),
        [(1, true), (3, false)]
    );
    assert_eq!(map.partitions_on(9).count(), 0);
}

#[test]
fn explicit_partitions_override_the_balance() {
    let shape = shape(&[&[1, 2], &[3, 4]], 2);
    for count in [1, 3, 7, 100, PARTITIONS_MAX] {
        let options = TableOptions {
            partitions: Some(count),
            partition_balance: PartitionBalance::ForRaByNode,
            ..TableOptions::default()
        };
        let map = map(&shape, &options);
        assert_eq!(map.partition_count(), count);
        let (per_node, per_node_ldm) = primary_counts(&shape, &map);
        assert!(spread(&per_node) <= 1, "{count}: {per_node:?}");
        assert!(spread(&per_node_ldm) <= 1, "{count}: {per_node_ldm:?}");
    }
    let fully = TableOptions {
        partitions: Some(5),
        fully_replicated: true,
        ..TableOptions::default()
    };
    let map = map(&shape, &fully);
    assert_eq!(map.partition_count(), 5);
    assert_eq!(map.copies(4).count(), 2);
}

#[test]
fn partition_count_limits() {
    let shape = shape(&[&[1, 2]], 1);
    let explicit = |count| TableOptions {
        partitions: Some(count),
        ..TableOptions::default()
    };
    let zero = PartitionMap::compute(&shape, &explicit(0)).unwrap_err();
    assert_eq!(zero.code, ErrorCode::NoPartitions);
    assert_eq!(zero.code.mysql_code(), 1504);
    let too_many = PartitionMap::compute(&shape, &explicit(PARTITIONS_MAX + 1)).unwrap_err();
    assert_eq!(too_many.code, ErrorCode::TooManyPartitions);
    assert_eq!(too_many.code.mysql_code(), 1499);
    assert!(explicit(PARTITIONS_MAX).validate().is_ok());

    // 72 nodes × 32 LDM threads = 2,304 partitions: over the limit.
    let nodes: Vec<NodeId> = (1..=72).collect();
    let big = ClusterShape::in_order(&nodes, 2, 32).unwrap();
    let error = PartitionMap::compute(&big, &TableOptions::default()).unwrap_err();
    assert_eq!(error.code, ErrorCode::TooManyPartitions);
    assert!(error.detail.contains("FOR_RP_BY_LDM"), "{error}");
    // FOR_RA_BY_LDM on the same cluster: 36 × 32 = 1,152, which fits.
    let fits = map(&big, &with_balance(PartitionBalance::ForRaByLdm));
    assert_eq!(fits.partition_count(), 1152);
}

#[test]
fn cluster_shapes_are_validated() {
    let bad = [
        ClusterShape {
            node_groups: vec![],
            ldm_threads: 1,
        },
        ClusterShape {
            node_groups: vec![vec![1, 2], vec![3]],
            ldm_threads: 1,
        },
        ClusterShape {
            node_groups: vec![vec![1, 2], vec![2, 3]],
            ldm_threads: 1,
        },
        ClusterShape {
            node_groups: vec![vec![0, 1]],
            ldm_threads: 1,
        },
        ClusterShape {
            node_groups: vec![vec![1, 2]],
            ldm_threads: 0,
        },
        ClusterShape {
            node_groups: vec![vec![1, 2, 3, 4, 5]],
            ldm_threads: 1,
        },
        ClusterShape {
            node_groups: vec![vec![]],
            ldm_threads: 1,
        },
    ];
    for shape in bad {
        let error = PartitionMap::compute(&shape, &TableOptions::default()).unwrap_err();
        assert_eq!(error.code, ErrorCode::BadConfiguration, "{shape:?}");
    }
    assert!(ClusterShape::in_order(&[1, 2, 3], 2, 1).is_err());
    let shape = ClusterShape::in_order(&[1, 2, 3, 4, 5, 6], 3, 2).unwrap();
    assert_eq!(shape.node_groups, [vec![1, 2, 3], vec![4, 5, 6]]);
    assert_eq!(shape.replicas(), 3);
    assert_eq!(shape.data_nodes(), 6);
}

#[test]
fn balance_names_round_trip_case_insensitively() {
    for balance in PartitionBalance::ALL {
        assert_eq!(PartitionBalance::from_name(balance.name()), Some(balance));
        assert_eq!(
            PartitionBalance::from_name(&balance.name().to_lowercase()),
            Some(balance)
        );
    }
    assert_eq!(PartitionBalance::ForRaByLdmX3.name(), "FOR_RA_BY_LDM_X_3");
    assert_eq!(PartitionBalance::from_name("FOR_RA_BY_LDM_X_5"), None);
}

fn apply(comment: &str) -> Result<TableOptions, schema::Error> {
    let mut options = TableOptions::default();
    options.apply_ndb_table_comment(comment).map(|()| options)
}

#[test]
fn ndb_table_comments_set_options() {
    let options = apply(
        "NDB_TABLE=READ_BACKUP=0,PARTITION_BALANCE=FOR_RA_BY_NODE,FULLY_REPLICATED=1,NOLOGGING=1",
    )
    .unwrap();
    assert_eq!(
        options,
        TableOptions {
            read_backup: false,
            partition_balance: PartitionBalance::ForRaByNode,
            partitions: None,
            fully_replicated: true,
            nologging: true,
            distribution_key: Vec::new(),
            sql_metadata: Vec::new(),
        }
    );
    // Other text around it, lower case, only some options.
    let options =
        apply("hot rows; ndb_table=partition_balance=for_ra_by_ldm_x_2 see docs").unwrap();
    assert_eq!(options.partition_balance, PartitionBalance::ForRaByLdmX2);
    assert!(options.read_backup, "unnamed options keep their value");
    // No NDB_TABLE= at all changes nothing.
    assert_eq!(apply("just a comment").unwrap(), TableOptions::default());
    assert_eq!(apply("").unwrap(), TableOptions::default());
    // Not at a word start: not an option list.
    assert_eq!(
        apply("XNDB_TABLE=NOLOGGING=1").unwrap(),
        TableOptions::default()
    );
}

#[test]
fn bad_ndb_table_comments_are_errors_naming_the_problem() {
    let cases = [
        ("NDB_TABLE=READ_BACKUP=2", "'2'"),
        ("NDB_TABLE=READ_BACKUP=yes", "'yes'"),
        ("NDB_TABLE=COLOUR=1", "'COLOUR'"),
        ("NDB_TABLE=PARTITION_BALANCE=FOR_EVERYONE", "'FOR_EVERYONE'"),
        ("NDB_TABLE=NOLOGGING", "'NOLOGGING'"),
        ("NDB_TABLE=NOLOGGING=1,NOLOGGING=0", "twice"),
        ("NDB_TABLE=NOLOGGING=1,", "''"),
        ("NDB_TABLE=", "no option"),
        ("NDB_TABLE= READ_BACKUP=1", "no option"),
        ("NDB_TABLE=NOLOGGING=1 NDB_TABLE=READ_BACKUP=0", "twice"),
    ];
    for (comment, needle) in cases {
        let mut options = TableOptions::default();
        let error = options.apply_ndb_table_comment(comment).unwrap_err();
        assert_eq!(error.code, ErrorCode::IllegalTableOption, "{comment}");
        assert_eq!(error.code.mysql_code(), 1478);
        assert!(
            error.detail.contains(needle),
            "{comment}: {error} should mention {needle}"
        );
        assert_eq!(options, TableOptions::default(), "{comment}: unchanged");
    }
    // A failing option late in the list leaves earlier ones unapplied.
    let mut options = TableOptions::default();
    assert!(
        options
            .apply_ndb_table_comment("NDB_TABLE=NOLOGGING=1,READ_BACKUP=7")
            .is_err()
    );
    assert!(!options.nologging);
}

#[test]
fn ndb_table_comments_round_trip() {
    for balance in PartitionBalance::ALL {
        for bits in 0..8u8 {
            let options = TableOptions {
                read_backup: bits & 1 != 0,
                partition_balance: balance,
                partitions: None,
                fully_replicated: bits & 2 != 0,
                nologging: bits & 4 != 0,
                distribution_key: Vec::new(),
                sql_metadata: Vec::new(),
            };
            let comment = options.to_ndb_table_comment();
            // Applying onto options that differ everywhere still gives these back.
            let mut other = TableOptions {
                read_backup: !options.read_backup,
                partition_balance: PartitionBalance::ForRaByLdmX4,
                partitions: None,
                fully_replicated: !options.fully_replicated,
                nologging: !options.nologging,
                distribution_key: Vec::new(),
                sql_metadata: Vec::new(),
            };
            other.apply_ndb_table_comment(&comment).unwrap();
            assert_eq!(other, options, "{comment}");
        }
    }
    assert_eq!(
        TableOptions::default().to_ndb_table_comment(),
        "NDB_TABLE=READ_BACKUP=1,PARTITION_BALANCE=FOR_RP_BY_LDM,FULLY_REPLICATED=0,NOLOGGING=0"
    );
}

#[test]
fn buckets_spread_evenly_over_any_partition_count() {
    let shape = shape(&[&[1, 2]], 1);
    for count in 1..=PARTITIONS_MAX {
        let options = TableOptions {
            partitions: Some(count),
            ..TableOptions::default()
        };
        let map = map(&shape, &options);
        let mut buckets = vec![0u32; count as usize];
        for bucket in 0..HASH_MAP_BUCKETS {
            buckets[map.partition_of_bucket(bucket) as usize] += 1;
        }
        let most = buckets.iter().max().unwrap();
        let fewest = buckets.iter().min().unwrap();
        assert!(*fewest >= 1, "{count}: a partition without buckets");
        assert!(most - fewest <= 1, "{count}: {fewest}..={most}");
    }
}

#[test]
fn golden_partition_of_hash() {
    // These decide where rows live: they must never change.
    let cases: [(u64, [u32; 5]); 8] = [
        (0, [0, 0, 0, 0, 0]),
        (1, [1, 1, 1, 1, 1]),
        (3839, [1, 2, 7, 23, 1791]),
        (3840, [0, 0, 0, 0, 0]),
        (7681, [1, 1, 1, 1, 1]),
        (0xDEAD_BEEF, [1, 2, 7, 23, 239]),
        (12_345_678_901_234_567_890, [0, 0, 2, 18, 210]),
        (u64::MAX, [1, 0, 7, 15, 255]),
    ];
    let shape = shape(&[&[1, 2]], 1);
    let counts = [2, 3, 8, 24, 2048];
    for (hash, expected) in cases {
        for (&count, &partition) in counts.iter().zip(&expected) {
            let options = TableOptions {
                partitions: Some(count),
                ..TableOptions::default()
            };
            assert_eq!(
                map(&shape, &options).partition_of_hash(hash),
                partition,
                "hash {hash} over {count} partitions"
            );
        }
    }
    assert_eq!(bucket_of_hash(u64::MAX), 255);
}

#[test]
fn golden_partition_of_key() {
    // Keys whose hashes tests/key_properties.rs pins: nullable INT 1 hashes
    // to 0xF925_2378_3228_734B (bucket 331), INT -1 to 0x2EE4_8029_A7DE_79E2
    // (bucket 2274); over 8 partitions they land in 3 and 2.
    let map = map(&shape(&[&[1, 2], &[3, 4]], 2), &TableOptions::default());
    assert_eq!(map.partition_count(), 8);
    let int_one = [0x01, 0x80, 0x00, 0x00, 0x01];
    let int_minus_one = [0x01, 0x7F, 0xFF, 0xFF, 0xFF];
    assert_eq!(bucket_of_hash(key_hash(&int_one)), 331);
    assert_eq!(bucket_of_hash(key_hash(&int_minus_one)), 2274);
    assert_eq!(map.partition_of_key(&int_one), 3);
    assert_eq!(map.partition_of_key(&int_minus_one), 2);
}

#[test]
fn render_lists_one_line_per_partition() {
    let map = map(&shape(&[&[1, 2], &[3, 4]], 1), &TableOptions::default());
    assert_eq!(
        map.render(),
        "Partition\tNode group\tPrimary\tBackups\tLDM\n\
         0\t0\t1\t2\t0\n\
         1\t1\t3\t4\t0\n\
         2\t0\t2\t1\t0\n\
         3\t1\t4\t3\t0\n"
    );
    let fully = TableOptions {
        fully_replicated: true,
        partitions: Some(1),
        ..TableOptions::default()
    };
    let single = shape(&[&[1], &[2]], 1);
    assert_eq!(
        PartitionMap::compute(&single, &fully).unwrap().render(),
        "Partition\tNode group\tPrimary\tBackups\tLDM\n0\t0\t1\t-\t0\n0\t1\t2\t-\t0\n"
    );
}

fn arbitrary_shape() -> impl Strategy<Value = ClusterShape> {
    (1usize..=6, 1usize..=4, 1u32..=8).prop_map(|(groups, replicas, ldm_threads)| {
        let nodes: Vec<NodeId> = (1..=(groups * replicas) as NodeId).collect();
        ClusterShape::in_order(&nodes, replicas, ldm_threads).unwrap()
    })
}

fn arbitrary_options() -> impl Strategy<Value = TableOptions> {
    (
        0..PartitionBalance::ALL.len(),
        proptest::option::weighted(0.3, 1u32..=64),
        any::<bool>(),
    )
        .prop_map(|(balance, partitions, fully_replicated)| TableOptions {
            partition_balance: PartitionBalance::ALL[balance],
            partitions,
            fully_replicated,
            ..TableOptions::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn partition_maps_keep_their_invariants(
        shape in arbitrary_shape(),
        options in arbitrary_options(),
        hashes in proptest::collection::vec(any::<u64>(), 16),
    ) {
        let map = PartitionMap::compute(&shape, &options).unwrap();
        let groups = shape.node_groups.len() as u32;
        let replicas = shape.replicas() as u32;
        let expected_count = options.partitions.unwrap_or_else(|| {
            options.partition_balance.partition_count(
                if options.fully_replicated { 1 } else { groups },
                replicas,
                shape.ldm_threads,
            )
        });
        prop_assert_eq!(map.partition_count(), expected_count);
        prop_assert_eq!(map.fully_replicated(), options.fully_replicated);
        let copies = if options.fully_replicated { groups as usize } else { 1 };
        prop_assert_eq!(map.copies_per_partition(), copies);
        assert_replicas_are_one_group(&shape, &map);
        for partition in 0..map.partition_count() {
            prop_assert_eq!(map.copies(partition).count(), copies);
            if !options.fully_replicated {
                prop_assert_eq!(u32::from(map.partition(partition).node_group), partition % groups);
            }
        }

        // Primaries spread evenly, whatever the count: node groups get
        // partition counts differing by at most one, and each group spreads
        // its own over nodes and LDM threads.
        let (per_node, per_node_ldm) = primary_counts(&shape, &map);
        prop_assert!(spread(&per_node) <= 1, "{:?}", per_node);
        prop_assert!(spread(&per_node_ldm) <= 1, "{:?}", per_node_ldm);

        // partitions_on agrees with the copies.
        for &node in shape.node_groups.iter().flatten() {
            for (partition, is_primary) in map.partitions_on(node) {
                let copy = map
                    .copies(partition)
                    .find(|copy| copy.replicas.contains(&node))
                    .unwrap();
                prop_assert_eq!(is_primary, copy.primary() == node);
            }
            let held = map.partitions_on(node).count() as u32;
            let expected_held = (0..map.partition_count())
                .filter(|&p| map.copies(p).any(|copy| copy.replicas.contains(&node)))
                .count() as u32;
            prop_assert_eq!(held, expected_held);
        }

        for hash in hashes {
            let partition = map.partition_of_hash(hash);
            prop_assert!(partition < map.partition_count());
            prop_assert_eq!(partition, (hash % u64::from(HASH_MAP_BUCKETS)) as u32 % map.partition_count());
        }
    }
}

/// Orders by region and customer: `region` is case- and accent-insensitive,
/// the primary key is (region, customer, order_number), and `amount` is an
/// ordinary column.
fn orders_table() -> TableDef {
    TableDef::new(
        "orders",
        vec![
            ColumnDef::new(
                "region",
                ColumnType::Varchar {
                    length: 10,
                    collation: Collation::Utf8mb4AiCi,
                },
                false,
            ),
            ColumnDef::new("customer", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new("order_number", ColumnType::BigInt { unsigned: true }, false),
            ColumnDef::new("amount", ColumnType::Int { unsigned: false }, true),
        ],
        vec![0, 1, 2],
        vec![],
    )
    .unwrap()
}

/// `PARTITION BY KEY (customer, region)`: a customer's orders share a partition.
fn by_customer() -> TableOptions {
    TableOptions {
        distribution_key: vec![1, 0],
        ..TableOptions::default()
    }
}

fn order(region: &str, customer: i64, order_number: u64) -> Vec<(ColumnId, Value)> {
    vec![
        (0, Value::from(region)),
        (1, Value::Int(customer)),
        (2, Value::UInt(order_number)),
        (3, Value::Int(100)),
    ]
}

fn key_of(table: &TableDef, options: &TableOptions, values: &[(ColumnId, Value)]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_distribution_key_from_values(table, options, values, &mut out).unwrap();
    out
}

#[test]
fn distribution_key_defaults_to_the_primary_key() {
    let table = orders_table();
    let default = TableOptions::default();
    assert_eq!(distribution_key(&table, &default), vec![0, 1, 2]);
    assert_eq!(distribution_key(&table, &by_customer()), vec![1, 0]);
    assert_eq!(distribution_key_columns(&table, &by_customer()), [1, 0]);
    default.validate_for(&table).unwrap();
    by_customer().validate_for(&table).unwrap();
    // The whole primary key, in another order, is a valid key too.
    let reordered = TableOptions {
        distribution_key: vec![2, 1, 0],
        ..TableOptions::default()
    };
    reordered.validate_for(&table).unwrap();
}

#[test]
fn invalid_distribution_keys_are_refused_naming_the_column() {
    let table = orders_table();
    let cases: [(Vec<ColumnId>, ErrorCode, u16, &str); 4] = [
        (
            vec![1, 3],
            ErrorCode::DistributionKeyOutsidePrimaryKey,
            1503,
            "'amount'",
        ),
        (
            vec![9],
            ErrorCode::NoSuchDistributionKeyColumn,
            1488,
            "column #9",
        ),
        (
            vec![0, 1, 0],
            ErrorCode::DuplicateDistributionKeyColumn,
            1652,
            "'region' twice",
        ),
        (
            vec![1, 1],
            ErrorCode::DuplicateDistributionKeyColumn,
            1652,
            "'customer' twice",
        ),
    ];
    for (key, code, mysql_code, needle) in cases {
        let options = TableOptions {
            distribution_key: key.clone(),
            ..TableOptions::default()
        };
        let error = options.validate_for(&table).unwrap_err();
        assert_eq!(error.code, code, "{key:?}");
        assert_eq!(error.code.mysql_code(), mysql_code, "{key:?}");
        assert!(error.detail.contains(needle), "{error} should say {needle}");
    }
    assert_eq!(
        ErrorCode::DistributionKeyOutsidePrimaryKey.message(),
        "A PRIMARY KEY must include all columns in the table's partitioning function"
    );
    // validate_for checks what validate checks, too.
    let no_partitions = TableOptions {
        partitions: Some(0),
        ..by_customer()
    };
    assert_eq!(
        no_partitions.validate_for(&table).unwrap_err().code,
        ErrorCode::NoPartitions
    );
}

#[test]
fn a_customers_rows_share_a_partition() {
    let table = orders_table();
    let options = by_customer();
    let map = map(&shape(&[&[1, 2], &[3, 4]], 2), &options);
    assert_eq!(map.partition_count(), 8);
    for customer in 0..200 {
        let first = key_of(&table, &options, &order("north", customer, 0));
        let partition = map.partition_of_key(&first);
        for order_number in 1..20 {
            // Other order numbers, other amounts, and the region in another
            // case and accent: equal under the collation, so the same key.
            let mut values = order("NÖRTH", customer, order_number * 7919);
            values[3].1 = Value::Int(order_number as i64);
            let key = key_of(&table, &options, &values);
            assert_eq!(key, first, "customer {customer} order {order_number}");
            assert_eq!(map.partition_of_key(&key), partition);
        }
        // The order of the values given does not matter, only the key's.
        let mut reversed = order("north", customer, 5);
        reversed.reverse();
        assert_eq!(key_of(&table, &options, &reversed), first);
    }
    // With the default key the order number is part of the hash, and a
    // customer's orders scatter.
    let default = TableOptions::default();
    let scattered: std::collections::BTreeSet<u32> = (0..64)
        .map(|order_number| {
            map.partition_of_key(&key_of(&table, &default, &order("north", 1, order_number)))
        })
        .collect();
    assert!(scattered.len() > 4, "{scattered:?}");
}

#[test]
fn different_distribution_keys_spread_over_partitions() {
    let table = orders_table();
    let options = by_customer();
    let map = map(&shape(&[&[1, 2], &[3, 4]], 2), &options);
    let customers = 4000;
    let mut per_partition = vec![0u32; map.partition_count() as usize];
    for customer in 0..customers {
        let key = key_of(&table, &options, &order("south", customer, 1));
        per_partition[map.partition_of_key(&key) as usize] += 1;
    }
    let fair_share = customers as u32 / map.partition_count();
    for (partition, &count) in per_partition.iter().enumerate() {
        assert!(
            count > fair_share * 3 / 4 && count < fair_share * 5 / 4,
            "partition {partition} has {count} of {customers} customers: {per_partition:?}"
        );
    }
    // The region is part of the key: the same customer in other regions
    // lands in more than one partition.
    let regions: std::collections::BTreeSet<u32> = ["north", "south", "east", "west", "centre"]
        .into_iter()
        .chain(["a", "b", "c", "d", "e", "f", "g"])
        .map(|region| map.partition_of_key(&key_of(&table, &options, &order(region, 7, 1))))
        .collect();
    assert!(regions.len() > 1, "{regions:?}");
}

/// The stored row and the primary-key AttrInfo of `values`.
fn row_and_key(table: &TableDef, values: &[(ColumnId, Value)]) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let mut row = Vec::new();
    let mut key = Vec::new();
    let mut row_writer = AttrInfoWriter::new(&mut row);
    for (column, value) in values {
        let mut stored = Vec::new();
        value
            .encode(table.column_type(*column), &mut stored)
            .unwrap();
        row_writer.push(*column, Some(&stored));
    }
    // The key in an order of its own, as clients may send it.
    let mut key_writer = AttrInfoWriter::new(&mut key);
    for (column, value) in values.iter().rev() {
        if table.primary_key.contains(column) {
            let mut stored = Vec::new();
            value
                .encode(table.column_type(*column), &mut stored)
                .unwrap();
            key_writer.push(*column, Some(&stored));
        }
    }
    let mut fixed = vec![0; table.layout.fixed_bytes as usize];
    let mut var = Vec::new();
    RowBuilder::default()
        .build(table, None, &row, &mut fixed, &mut var)
        .unwrap();
    (fixed, var, key)
}

#[test]
fn rows_attrinfo_keys_and_values_encode_alike() {
    let table = orders_table();
    for options in [TableOptions::default(), by_customer()] {
        for (region, customer, order_number) in [("north", 1, 2), ("Åland", -5, u64::MAX)] {
            let values = order(region, customer, order_number);
            let (fixed, var, key) = row_and_key(&table, &values);
            let row = RowView {
                fixed: &fixed,
                var: &var,
            };
            let from_values = key_of(&table, &options, &values);
            let mut from_row = vec![0xAA];
            encode_distribution_key_from_row(&table, &options, row, &mut from_row);
            assert_eq!(from_row[1..], from_values, "appends after what is there");
            let mut from_attrinfo = Vec::new();
            encode_distribution_key_from_attrinfo(&table, &options, &key, &mut from_attrinfo)
                .unwrap();
            assert_eq!(from_attrinfo, from_values);
            // It is the sortable encoding of the effective key's columns.
            let mut expected = Vec::new();
            encode_row_key(
                &table,
                distribution_key_columns(&table, &options),
                row,
                &mut expected,
            );
            assert_eq!(expected, from_values);
        }
    }
    // With the default key, the bytes are the primary key's: the hash the
    // LDM computes for its hash index.
    let values = order("north", 1, 2);
    let (_, _, key) = row_and_key(&table, &values);
    let mut primary_key = Vec::new();
    encode_attrinfo_key(&table, &table.primary_key, &key, false, &mut primary_key).unwrap();
    assert_eq!(
        key_of(&table, &TableOptions::default(), &values),
        primary_key
    );
}

#[test]
fn golden_distribution_key_partition() {
    // PRIMARY KEY (id, name), PARTITION BY KEY (id): only id is hashed, and
    // INT NOT NULL 1 encodes to 80 00 00 01, whose hash tests/key_properties.rs
    // pins (bucket 2150, partition 6 of 8). This decides where rows live.
    let table = TableDef::new(
        "golden",
        vec![
            ColumnDef::new("id", ColumnType::Int { unsigned: false }, false),
            ColumnDef::new(
                "name",
                ColumnType::Varchar {
                    length: 10,
                    collation: Collation::Utf8mb4AiCi,
                },
                false,
            ),
        ],
        vec![0, 1],
        vec![],
    )
    .unwrap();
    let options = TableOptions {
        distribution_key: vec![0],
        ..TableOptions::default()
    };
    options.validate_for(&table).unwrap();
    let map = map(&shape(&[&[1, 2], &[3, 4]], 2), &options);
    for name in ["abc", "xyz", ""] {
        let key = key_of(
            &table,
            &options,
            &[(1, Value::from(name)), (0, Value::Int(1))],
        );
        assert_eq!(key, [0x80, 0x00, 0x00, 0x01]);
        assert_eq!(key_hash(&key), 0x25C7_5F1B_C399_BB66);
        assert_eq!(bucket_of_hash(key_hash(&key)), 2150);
        assert_eq!(map.partition_of_key(&key), 6);
    }
}

#[test]
fn bad_keys_are_refused_and_append_nothing() {
    let table = orders_table();
    let options = by_customer();
    let values_error = |values: &[(ColumnId, Value)]| {
        let mut out = vec![7];
        let error =
            encode_distribution_key_from_values(&table, &options, values, &mut out).unwrap_err();
        assert_eq!(out, [7], "{values:?}");
        error
    };
    // order_number and amount are not in the distribution key: not needed.
    assert!(
        encode_distribution_key_from_values(
            &table,
            &options,
            &[(1, Value::Int(3)), (0, Value::from("x"))],
            &mut Vec::new()
        )
        .is_ok()
    );
    let missing = values_error(&[(1, Value::Int(3))]);
    assert_eq!(missing.code, ErrorCode::WrongKey);
    assert!(missing.detail.contains("'region'"), "{missing}");
    let twice = values_error(&[
        (0, Value::from("x")),
        (1, Value::Int(3)),
        (1, Value::Int(4)),
    ]);
    assert_eq!(twice.code, ErrorCode::WrongKey);
    assert!(
        twice.detail.contains("'customer' is given twice"),
        "{twice}"
    );
    let null = values_error(&[(0, Value::from("x")), (1, Value::Null)]);
    assert_eq!(null.code, ErrorCode::NullNotAllowed);
    let wrong_type = values_error(&[(0, Value::from("x")), (1, Value::Double(1.5))]);
    assert_eq!(wrong_type.code, ErrorCode::WrongValue);
    assert!(wrong_type.detail.contains("'customer'"), "{wrong_type}");
    let too_long = values_error(&[(0, Value::from("far too long a name")), (1, Value::Int(1))]);
    assert_eq!(too_long.code, ErrorCode::DataTooLong);

    // An AttrInfo key must be the whole primary key, as the LDM requires,
    // even though only part of it is hashed.
    let (_, _, key) = row_and_key(&table, &order("north", 1, 2));
    let mut partial = Vec::new();
    let mut writer = AttrInfoWriter::new(&mut partial);
    writer.push(0, Some(b"north"));
    writer.push(1, Some(&1i32.to_le_bytes()));
    let mut out = vec![7];
    let error =
        encode_distribution_key_from_attrinfo(&table, &options, &partial, &mut out).unwrap_err();
    assert_eq!(error.code, ErrorCode::WrongKey);
    assert_eq!(out, [7]);
    let mut with_amount = key.clone();
    AttrInfoWriter::new(&mut with_amount).push(3, Some(&1i32.to_le_bytes()));
    let error = encode_distribution_key_from_attrinfo(&table, &options, &with_amount, &mut out)
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::WrongKey);
    assert_eq!(out, [7]);
}
