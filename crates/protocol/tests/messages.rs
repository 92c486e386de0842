//! Every message survives encode → frame → decode unchanged; corrupt or
//! truncated bytes are rejected without panicking.

use proptest::prelude::*;
use protocol::frame::{FRAME_HEADER_BYTES, RETAINED_ROOM_FACTOR};
use protocol::*;

fn member() -> impl Strategy<Value = Member> {
    (1u8..=255, any::<u64>()).prop_map(|(node, incarnation)| Member { node, incarnation })
}

fn ballot() -> impl Strategy<Value = Ballot> {
    (any::<u32>(), any::<u8>()).prop_map(|(round, node)| Ballot { round, node })
}

fn table() -> impl Strategy<Value = TableEntry> {
    (
        any::<u32>(),
        "[a-z]{1,12}",
        any::<u64>(),
        prop::collection::vec(any::<u8>(), 0..64),
        prop::collection::vec(
            (
                any::<u32>(),
                any::<u16>(),
                prop::collection::vec(1u8..=255, 1..4),
                0u32..8,
            ),
            0..8,
        ),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(id, name, schema_version, definition, fragments, fully_replicated, read_backup)| {
                TableEntry {
                    id,
                    name,
                    schema_version,
                    definition,
                    partition_count: fragments.len() as u32,
                    fully_replicated,
                    read_backup,
                    fragments: fragments
                        .into_iter()
                        .map(|(partition, node_group, replicas, ldm)| Fragment {
                            partition,
                            node_group,
                            replicas,
                            ldm,
                        })
                        .collect(),
                }
            },
        )
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        prop::collection::vec(member(), 0..6).prop_map(|members| Change::Membership { members }),
        (table(), origin()).prop_map(|(table, origin)| Change::CreateTable { table, origin }),
        (any::<u32>(), origin())
            .prop_map(|(table_id, origin)| Change::DropTable { table_id, origin }),
        member().prop_map(|member| Change::NodeStarted { member }),
    ]
}

fn origin() -> impl Strategy<Value = SchemaRequestId> {
    (any::<u8>(), any::<u64>()).prop_map(|(node, request)| SchemaRequestId { node, request })
}

fn state() -> impl Strategy<Value = ClusterState> {
    (
        (any::<u64>(), any::<u64>()),
        (
            prop::collection::vec(member(), 0..6),
            prop::collection::vec(member(), 0..3),
        ),
        any::<u64>(),
        any::<u32>(),
        prop::collection::vec(table(), 0..3),
        prop::collection::vec(
            (origin(), any::<u32>())
                .prop_map(|(origin, table_id)| SchemaOutcome { origin, table_id }),
            0..3,
        ),
    )
        .prop_map(
            |(
                (generation, version),
                (members, removed),
                schema_version,
                next_table_id,
                tables,
                schema_outcomes,
            )| {
                ClusterState {
                    generation,
                    version,
                    // Any member lists round-trip; these reuse the drawn ones.
                    starting: removed.iter().rev().copied().collect(),
                    recovered: members.iter().skip(1).copied().collect(),
                    members,
                    removed,
                    schema_version,
                    next_table_id,
                    tables,
                    schema_outcomes,
                    restore_epoch: generation.rotate_left(7),
                    epoch_floor: version ^ schema_version,
                }
            },
        )
}

fn error_reply() -> impl Strategy<Value = ErrorReply> {
    (any::<u16>(), any::<u16>(), ".{0,20}").prop_map(|(ndb_code, mysql_code, message)| ErrorReply {
        ndb_code,
        mysql_code,
        message,
    })
}

fn role() -> impl Strategy<Value = NodeRole> {
    prop_oneof![
        Just(NodeRole::Data),
        Just(NodeRole::Management),
        Just(NodeRole::Api)
    ]
}

fn cluster_message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (any::<u8>(), any::<u64>(), role(), any::<[u8; 16]>()).prop_map(
            |(node, incarnation, role, nonce)| Message::Hello {
                node,
                incarnation,
                role,
                nonce,
            }
        ),
        any::<[u8; 32]>().prop_map(|proof| Message::HelloProof { proof }),
        (
            any::<u64>(),
            any::<u64>(),
            prop::option::of((any::<u64>(), any::<u64>())),
            any::<u64>(),
        )
            .prop_map(
                |(generation, version, free, sent_at_ms)| Message::Heartbeat {
                    generation,
                    version,
                    free_pages: free.map(|(pages, schema_version)| FreePages {
                        pages,
                        schema_version
                    }),
                    sent_at_ms,
                }
            ),
        any::<u64>().prop_map(|sent_at_ms| Message::HeartbeatEcho { sent_at_ms }),
        any::<u32>().prop_map(|ring_bytes| Message::SharedMemoryOffer { ring_bytes }),
        (any::<bool>(), ".{0,20}")
            .prop_map(|(accepted, reason)| Message::SharedMemoryAnswer { accepted, reason }),
        member().prop_map(|member| Message::Join { member }),
        (any::<u64>(), member()).prop_map(|(version, member)| Message::Suspect { version, member }),
        (any::<u64>(), any::<u64>(), ballot()).prop_map(|(generation, version, ballot)| {
            Message::Prepare {
                generation,
                version,
                ballot,
            }
        }),
        (
            any::<u64>(),
            ballot(),
            prop::option::of((ballot(), change()))
        )
            .prop_map(|(version, ballot, accepted)| Message::Promise {
                version,
                ballot,
                accepted: accepted.map(Box::new)
            }),
        (any::<u64>(), ballot(), ballot()).prop_map(|(version, ballot, promised)| Message::Nack {
            version,
            ballot,
            promised
        }),
        any::<u64>().prop_map(|version| Message::Behind { version }),
        (any::<u64>(), any::<u64>(), ballot(), change()).prop_map(
            |(generation, version, ballot, change)| Message::Accept {
                generation,
                version,
                ballot,
                change: Box::new(change)
            }
        ),
        (any::<u64>(), ballot())
            .prop_map(|(version, ballot)| Message::Accepted { version, ballot }),
        state().prop_map(|state| Message::Decided {
            state: Box::new(state)
        }),
        (
            any::<u64>(),
            prop::collection::vec(any::<u8>(), 0..32),
            "[a-z]{0,8}",
            any::<bool>()
        )
            .prop_map(
                |(request, definition, name, create)| Message::SchemaRequest {
                    request,
                    change: if create {
                        SchemaChange::CreateTable { definition }
                    } else {
                        SchemaChange::DropTable { name }
                    }
                }
            ),
        (
            any::<u64>(),
            prop::result::maybe_ok(any::<u32>(), error_reply())
        )
            .prop_map(|(request, result)| Message::SchemaReply { request, result }),
        any::<u64>().prop_map(|request| Message::DictionaryRequest { request }),
        (any::<u64>(), state()).prop_map(|(request, state)| Message::DictionaryReply {
            request,
            state: Box::new(state)
        }),
        (role(), prop::option::of(1u8..=255), any::<u16>()).prop_map(
            |(role, requested, listen_port)| Message::AllocateNodeId {
                role,
                requested,
                listen_port
            }
        ),
        (any::<u8>(), ".{0,10}", ".{0,100}", any::<[u8; 32]>()).prop_map(
            |(node, config_file, config_text, secret)| Message::NodeIdAllocated {
                node,
                config_file,
                config_text,
                secret,
            }
        ),
        error_reply().prop_map(|error| Message::Refused { error }),
        prop::collection::vec((any::<u8>(), "[a-z0-9.]{0,15}", any::<u16>()), 0..5).prop_map(
            |entries| Message::Addresses {
                entries: entries
                    .into_iter()
                    .map(|(node, host, port)| Address { node, host, port })
                    .collect()
            }
        ),
        (
            any::<bool>(),
            (any::<u64>(), any::<u64>()),
            any::<u64>(),
            any::<u8>(),
            prop::collection::vec(any::<u8>(), 0..5),
            any::<u64>(),
            any::<u32>(),
            any::<u64>(),
            any::<u64>()
        )
            .prop_map(
                |(
                    started,
                    (incarnation, generation),
                    version,
                    president,
                    members,
                    schema_version,
                    tables,
                    pages_used,
                    pages_total,
                )| Message::StatusReport {
                    report: Box::new(DataNodeReport {
                        started,
                        recovering: version % 3 == 1,
                        fragments_copied: tables / 3,
                        fragments_to_copy: tables,
                        rows_copied: pages_used ^ generation,
                        incarnation,
                        generation,
                        version,
                        president,
                        members,
                        schema_version,
                        tables,
                        pages_used,
                        pages_total,
                        durability: protocol::Durability {
                            epoch: pages_total ^ 7,
                            durable_epoch: pages_used / 3,
                            redo_used_bytes: generation ^ 5,
                            redo_total_bytes: incarnation / 7,
                        },
                        restorable_epoch: version ^ 9,
                        restorable_generation: version ^ 10,
                        restored_from_generation: version ^ 11,
                        disk_epoch_max: tables as u64 * 3,
                    })
                }
            ),
        any::<u64>().prop_map(|request| Message::StatusRequest { request }),
        (
            any::<u64>(),
            prop::collection::vec(
                (
                    any::<u8>(),
                    role(),
                    "[a-z]{0,9}",
                    "[0-9.:]{0,15}",
                    0u8..4,
                    prop::option::of(any::<u16>()),
                    any::<bool>(),
                    any::<u64>(),
                    any::<u64>()
                ),
                0..5
            )
        )
            .prop_map(|(request, nodes)| Message::StatusReply {
                request,
                nodes: nodes
                    .into_iter()
                    .map(
                        |(
                            node,
                            role,
                            configured_host,
                            address,
                            state,
                            node_group,
                            president,
                            pages_used,
                            pages_total,
                        )| NodeStatus {
                            node,
                            role,
                            configured_host,
                            address,
                            state: NodeState::from_wire_id(state).unwrap(),
                            node_group,
                            president,
                            pages_used,
                            pages_total,
                            fragments_copied: (pages_used % 7) as u32,
                            fragments_to_copy: (pages_total % 11) as u32,
                            rows_copied: pages_used.rotate_left(3),
                            durability: protocol::Durability {
                                epoch: pages_total.rotate_left(9),
                                durable_epoch: pages_used ^ 3,
                                redo_used_bytes: pages_used / 5,
                                redo_total_bytes: pages_total | 1,
                            },
                        }
                    )
                    .collect()
            }),
        (
            any::<u64>(),
            prop::option::of(1u8..=255),
            any::<bool>(),
            prop::option::of(restart_options())
        )
            .prop_map(|(request, node, include_management, restart)| {
                Message::StopRequest {
                    request,
                    node,
                    include_management,
                    restart,
                }
            }),
        restart_options().prop_map(Message::Restart),
        any::<u8>().prop_map(|node| Message::WaitingForStart { node }),
        (any::<u64>(), any::<u8>())
            .prop_map(|(request, node)| Message::StartRequest { request, node }),
        (
            any::<u64>(),
            prop::result::maybe_ok(Just(()), error_reply())
        )
            .prop_map(|(request, result)| Message::StartReply { request, result }),
        Just(Message::Start),
        (
            any::<u64>(),
            prop::result::maybe_ok(prop::collection::vec(any::<u8>(), 0..4), error_reply())
        )
            .prop_map(|(request, result)| Message::StopReply { request, result }),
        Just(Message::Stop),
        Just(Message::Drain),
        (any::<u64>(), any::<u64>()).prop_map(|(epoch, durable_epoch)| Message::Drained {
            epoch,
            durable_epoch
        }),
        Just(Message::Leaving),
    ]
}

fn restart_options() -> impl Strategy<Value = RestartOptions> {
    (any::<bool>(), any::<bool>())
        .prop_map(|(initial, no_start)| RestartOptions { initial, no_start })
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

fn operation_kind() -> impl Strategy<Value = OperationKind> {
    prop::sample::select(OperationKind::ALL.to_vec())
}

fn operation() -> impl Strategy<Value = Operation> {
    (
        any::<u32>(),
        operation_kind(),
        bytes(12),
        bytes(12),
        prop::collection::vec(any::<u16>(), 0..4),
        any::<bool>(),
        prop::option::of(0u16..64),
    )
        .prop_map(
            |(table, kind, key, values, columns, ignore_error, index)| Operation {
                table,
                kind,
                key,
                values,
                columns,
                ignore_error,
                index,
            },
        )
}

fn bound() -> impl Strategy<Value = Bound> {
    prop_oneof![
        Just(Bound::Unbounded),
        bytes(8).prop_map(Bound::Inclusive),
        bytes(8).prop_map(Bound::Exclusive),
    ]
}

fn scan_open() -> impl Strategy<Value = ScanOpen> {
    (
        (
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            prop::option::of(any::<u16>()),
        ),
        (bound(), bound(), any::<bool>(), bytes(8), any::<bool>()),
        (
            prop::collection::vec(any::<u16>(), 0..4),
            prop::sample::select(vec![
                OperationKind::ReadCommitted,
                OperationKind::ReadShared,
                OperationKind::ReadExclusive,
            ]),
            prop::option::of(any::<u32>()),
        ),
        (any::<u32>(), any::<u32>(), any::<u32>(), any::<u8>()),
    )
        .prop_map(
            |(
                (transaction, scan, table, index),
                (lower, upper, descending, filter, start),
                (columns, mode, partition),
                (batch_rows, batch_bytes, fragment, coordinator),
            )| ScanOpen {
                transaction,
                start,
                scan,
                table,
                index,
                lower,
                upper,
                descending,
                filter,
                columns,
                mode,
                partition,
                batch_rows,
                batch_bytes,
                fragment,
                coordinator,
            },
        )
}

fn phase() -> impl Strategy<Value = Phase> {
    (
        any::<u64>(),
        any::<u8>(),
        any::<u32>(),
        any::<u32>(),
        bytes(4),
        any::<u8>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(
            |(transaction, coordinator, table, fragment, chain, api, client, epoch)| Phase {
                transaction,
                coordinator,
                table,
                fragment,
                chain,
                api,
                client,
                epoch,
            },
        )
}

fn phase_done() -> impl Strategy<Value = PhaseDone> {
    (any::<u64>(), any::<u32>(), any::<u32>()).prop_map(|(transaction, table, fragment)| {
        PhaseDone {
            transaction,
            table,
            fragment,
        }
    })
}

fn transaction_message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (
            any::<u64>(),
            any::<bool>(),
            prop::sample::select(vec![
                ExecuteEnd::NoCommit,
                ExecuteEnd::Commit,
                ExecuteEnd::Rollback
            ]),
            prop::collection::vec(operation(), 0..4)
        )
            .prop_map(
                |(transaction, start, end, operations)| Message::Execute(Execute {
                    transaction,
                    start,
                    end,
                    operations
                })
            ),
        (
            any::<u64>(),
            prop::sample::select(vec![
                TransactionState::Open,
                TransactionState::Committed,
                TransactionState::Aborted
            ]),
            prop::option::of(error_reply()),
            prop::collection::vec(
                (any::<u16>(), bytes(8)).prop_map(|(error, data)| OperationResult { error, data }),
                0..4
            ),
            any::<u32>(),
            any::<bool>(),
            any::<u64>()
        )
            .prop_map(
                |(transaction, state, error, results, hops, acknowledge, epoch)| {
                    Message::Executed(Executed {
                        transaction,
                        state,
                        error,
                        results,
                        hops,
                        acknowledge,
                        epoch,
                    })
                }
            ),
        scan_open().prop_map(|open| Message::ScanOpen(Box::new(open))),
        scan_open().prop_map(|open| Message::FragmentScanOpen(Box::new(open))),
        (
            (any::<u64>(), any::<u32>(), any::<u32>(), any::<u32>()),
            (bytes(16), any::<bool>(), prop::option::of(error_reply()))
        )
            .prop_map(
                |((transaction, scan, fragment, rows), (data, finished, error))| {
                    Message::ScanRows(ScanRows {
                        transaction,
                        scan,
                        fragment,
                        rows,
                        data,
                        finished,
                        error,
                    })
                }
            ),
        (
            any::<u64>(),
            any::<u32>(),
            prop::collection::vec(any::<u32>(), 0..4),
            any::<u8>()
        )
            .prop_map(|(transaction, scan, fragments, coordinator)| {
                Message::ScanNext(ScanNext {
                    transaction,
                    scan,
                    fragments,
                    coordinator,
                })
            }),
        (any::<u64>(), any::<u32>())
            .prop_map(|(transaction, scan)| Message::ScanClose { transaction, scan }),
        (
            any::<u8>(),
            any::<u8>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>()
        )
            .prop_map(
                |(asked_by, failed_node, failed_incarnation, generation, version)| {
                    Message::TakeoverQuery(TakeoverQuery {
                        asked_by,
                        failed_node,
                        failed_incarnation,
                        generation,
                        version,
                    })
                }
            ),
        (
            any::<u8>(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>()
        )
            .prop_map(
                |(
                    starter,
                    starter_incarnation,
                    copy,
                    table,
                    fragment,
                    generation,
                    version,
                    since_gci,
                )| {
                    Message::CopyRequest(CopyRequest {
                        starter,
                        starter_incarnation,
                        copy,
                        table,
                        fragment,
                        generation,
                        version,
                        since_gci,
                    })
                }
            ),
        (any::<u64>(), bytes(40), any::<bool>(), any::<bool>()).prop_map(
            |(copy, rows, finished, failed)| Message::CopyRows(CopyRows {
                copy,
                rows,
                finished,
                failed,
            })
        ),
        (any::<u8>(), any::<u64>(), any::<bool>()).prop_map(|(starter, copy, more)| {
            Message::CopyNext(CopyNext {
                starter,
                copy,
                more,
            })
        }),
        (any::<u8>(), any::<u64>()).prop_map(|(node, incarnation)| Message::NodeCopied {
            member: Member { node, incarnation }
        }),
        prop::collection::vec(any::<u64>(), 0..8).prop_map(|ids| Message::CommitAck {
            transactions: Box::new(ids)
        }),
        prop::collection::vec(any::<u64>(), 0..8).prop_map(|ids| Message::ForgetMarkers {
            transactions: Box::new(ids)
        }),
        (any::<u8>(), any::<u64>()).prop_map(|(failed_node, failed_incarnation)| {
            Message::TakeoverDone {
                failed_node,
                failed_incarnation,
            }
        }),
        (1u8..8, any::<u64>()).prop_map(|(step, epoch)| Message::Epoch {
            step: [
                EpochStep::Prepare,
                EpochStep::Prepared,
                EpochStep::Commit,
                EpochStep::Completed,
                EpochStep::Save,
                EpochStep::Saved,
                EpochStep::Durable,
            ][usize::from(step) - 1],
            epoch,
        }),
        (
            any::<u8>(),
            any::<u64>(),
            prop::collection::vec((any::<u64>(), any::<u32>(), any::<u32>(), 0u8..3), 0..4),
            prop::collection::vec((any::<u64>(), any::<u8>(), any::<u64>()), 0..3),
            any::<bool>()
        )
            .prop_map(
                |(failed_node, failed_incarnation, entries, markers, last)| {
                    let states = [
                        WorkState::Prepared,
                        WorkState::Committing,
                        WorkState::Committed,
                    ];
                    Message::TakeoverReport(Box::new(TakeoverReport {
                        failed_node,
                        failed_incarnation,
                        entries: entries
                            .into_iter()
                            .map(|(transaction, table, fragment, state)| TakeoverEntry {
                                transaction,
                                table,
                                fragment,
                                state: states[usize::from(state)],
                                // The epoch varies with the transaction.
                                epoch: transaction.rotate_left(7),
                            })
                            .collect(),
                        markers: markers
                            .into_iter()
                            .map(|(transaction, api, client)| protocol::MarkerEntry {
                                transaction,
                                api,
                                client,
                            })
                            .collect(),
                        last,
                    }))
                }
            ),
        (
            (any::<u64>(), any::<u8>(), any::<u32>()),
            operation(),
            any::<u32>(),
            bytes(4)
        )
            .prop_map(
                |((transaction, coordinator, number), operation, fragment, chain)| {
                    Message::KeyRequest(KeyRequest {
                        transaction,
                        coordinator,
                        operation: number,
                        table: operation.table,
                        fragment,
                        kind: operation.kind,
                        key: operation.key,
                        values: operation.values,
                        columns: operation.columns,
                        ignore_error: operation.ignore_error,
                        planned: transaction.rotate_left(7),
                        before: (chain.len() % 2 == 1).then(|| Box::new(chain.clone())),
                        chain: Chain::from_slice(&chain),
                    })
                }
            ),
        (any::<u64>(), any::<u32>(), bytes(8)).prop_map(|(transaction, operation, data)| {
            Message::KeyConfirm(KeyConfirm {
                transaction,
                operation,
                data,
            })
        }),
        (any::<u64>(), any::<u32>(), any::<u8>(), error_reply()).prop_map(
            |(transaction, operation, node, error)| Message::KeyRefuse(KeyRefuse {
                transaction,
                operation,
                node,
                error,
            })
        ),
        phase().prop_map(Message::Commit),
        phase().prop_map(Message::Complete),
        phase().prop_map(Message::Abort),
        phase_done().prop_map(Message::Committed),
        phase_done().prop_map(Message::Completed),
        phase_done().prop_map(Message::Aborted),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![cluster_message(), transaction_message()]
}

proptest! {
    #[test]
    fn messages_round_trip_through_frames(
        messages in prop::collection::vec(message(), 1..6),
        split in any::<prop::sample::Index>(),
    ) {
        let mut bytes = Vec::new();
        encode_frame(&messages, &mut bytes);
        encode_frame(&messages[..1], &mut bytes);
        // Bytes arrive in two arbitrary pieces.
        let cut = split.index(bytes.len() + 1);
        let mut decoder = FrameDecoder::new();
        let mut decoded = Vec::new();
        decoder.push(&bytes[..cut]);
        while decoder.next_frame(&mut decoded).unwrap() {}
        decoder.push(&bytes[cut..]);
        while decoder.next_frame(&mut decoded).unwrap() {}
        let mut expected = messages.clone();
        expected.push(messages[0].clone());
        prop_assert_eq!(decoded, expected);
        prop_assert_eq!(decoder.buffered_bytes(), 0);
    }

    /// A connection reads into the decoder's own room (`spare`, `filled`)
    /// in pieces of any size, with frames cut anywhere: undecoded bytes move
    /// to the front when room runs short and every frame still decodes once.
    #[test]
    fn frames_read_in_place_in_small_pieces(
        messages in prop::collection::vec(message(), 1..6),
        frames in 1usize..8,
        piece_bytes in 1usize..64,
        room_bytes in 1usize..256,
    ) {
        let mut bytes = Vec::new();
        for _ in 0..frames {
            encode_frame(&messages, &mut bytes);
        }
        let mut decoder = FrameDecoder::new();
        let mut decoded = Vec::new();
        let mut sent = 0;
        while sent < bytes.len() {
            let room = decoder.spare(room_bytes);
            prop_assert!(room.len() >= room_bytes);
            let piece = piece_bytes.min(room.len()).min(bytes.len() - sent);
            room[..piece].copy_from_slice(&bytes[sent..sent + piece]);
            decoder.filled(piece);
            sent += piece;
            while decoder.next_frame(&mut decoded).unwrap() {}
        }
        let expected: Vec<Message> = (0..frames).flat_map(|_| messages.clone()).collect();
        prop_assert_eq!(decoded, expected);
        prop_assert_eq!(decoder.buffered_bytes(), 0);
    }

    #[test]
    fn truncated_messages_are_rejected(message in message(), cut in any::<prop::sample::Index>()) {
        let mut bytes = Vec::new();
        message.encode(&mut bytes);
        let cut = cut.index(bytes.len());
        prop_assert!(Message::decode(&bytes[..cut]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        prop_assert!(Message::decode(&longer).is_err());
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = Message::decode(&bytes);
        let mut decoder = FrameDecoder::new();
        decoder.push(&bytes);
        let mut out = Vec::new();
        let _ = decoder.next_frame(&mut out);
    }
}

#[test]
fn a_flipped_payload_bit_fails_the_checksum() {
    let mut bytes = Vec::new();
    encode_frame(
        &[Message::Heartbeat {
            generation: 1,
            version: 7,
            free_pages: None,
            sent_at_ms: 0,
        }],
        &mut bytes,
    );
    bytes[FRAME_HEADER_BYTES + 5] ^= 1;
    let mut decoder = FrameDecoder::new();
    decoder.push(&bytes);
    let error = decoder.next_frame(&mut Vec::new()).unwrap_err();
    assert!(error.message.contains("checksum"), "{error}");
}

#[test]
fn another_protocol_version_is_refused() {
    let mut bytes = Vec::new();
    encode_frame(&[Message::Stop], &mut bytes);
    bytes[4] = 99;
    let mut decoder = FrameDecoder::new();
    decoder.push(&bytes);
    let error = decoder.next_frame(&mut Vec::new()).unwrap_err();
    assert!(error.message.contains("protocol version 99"), "{error}");
}

#[test]
fn an_oversized_length_is_refused_before_waiting_for_it() {
    let mut bytes = Vec::new();
    encode_frame(&[Message::Stop], &mut bytes);
    bytes[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    let mut decoder = FrameDecoder::new();
    decoder.push(&bytes[..FRAME_HEADER_BYTES]);
    assert!(decoder.next_frame(&mut Vec::new()).is_err());
}

#[test]
fn the_heartbeat_layout_is_pinned() {
    let mut bytes = Vec::new();
    encode_frame(
        &[Message::Heartbeat {
            generation: 3,
            version: 0x0102,
            free_pages: Some(FreePages {
                pages: 5,
                schema_version: 6,
            }),
            sent_at_ms: 0x0708,
        }],
        &mut bytes,
    );
    assert_eq!(&bytes[0..4], b"SHOL");
    assert_eq!(&bytes[4..8], &[11, 0, 1, 0]);
    assert_eq!(&bytes[8..12], &[46, 0, 0, 0]);
    assert_eq!(
        &bytes[16..],
        &[
            42, 0, 0, 0, 2, 3, 0, 0, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 1, 5, 0, 0, 0, 0, 0, 0,
            0, 6, 0, 0, 0, 0, 0, 0, 0, 8, 7, 0, 0, 0, 0, 0, 0
        ]
    );
}

/// The smallest encodings of a table and of a status row: a reader that
/// asks for more bytes per item than these refuses valid messages.
#[test]
fn the_smallest_items_decode() {
    let table = TableEntry {
        id: 0,
        name: String::new(),
        schema_version: 0,
        definition: Vec::new(),
        partition_count: 0,
        fully_replicated: false,
        read_backup: false,
        fragments: Vec::new(),
    };
    let status = NodeStatus {
        node: 1,
        role: NodeRole::Api,
        configured_host: String::new(),
        address: String::new(),
        state: NodeState::NotConnected,
        node_group: None,
        president: false,
        pages_used: 0,
        pages_total: 0,
        fragments_copied: 0,
        fragments_to_copy: 0,
        rows_copied: 0,
        durability: Default::default(),
    };
    for message in [
        Message::DictionaryReply {
            request: 1,
            state: Box::new(ClusterState {
                tables: vec![table],
                ..ClusterState::default()
            }),
        },
        Message::StatusReply {
            request: 1,
            nodes: vec![status],
        },
        Message::Execute(Execute {
            transaction: 1,
            start: true,
            end: ExecuteEnd::Commit,
            operations: vec![Operation::default()],
        }),
        Message::Executed(Executed {
            transaction: 1,
            state: TransactionState::Committed,
            error: None,
            results: vec![OperationResult::default()],
            hops: 0,
            acknowledge: false,
            epoch: 0,
        }),
        Message::ScanNext(ScanNext {
            transaction: 1,
            scan: 1,
            fragments: vec![0],
            coordinator: 2,
        }),
    ] {
        let mut bytes = Vec::new();
        message.encode(&mut bytes);
        assert_eq!(Message::decode(&bytes).unwrap(), message);
    }
}

#[test]
fn redirects_name_the_president() {
    let error = ErrorReply::not_president(3);
    assert!(
        error
            .message
            .starts_with("request to a node that does not preside: retry at node 3"),
        "{error:?}"
    );
    assert_eq!(error.president_hint(), Some(3));
    assert_eq!(ErrorReply::not_president(0).president_hint(), None);
    let other = ErrorReply {
        ndb_code: 721,
        mysql_code: 1050,
        message: "table exists".into(),
    };
    assert_eq!(other.president_hint(), None);
}

/// A frame header announcing `payload_bytes` (the payload itself is not sent).
fn header_announcing(payload_bytes: u32) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_frame(&[Message::Stop], &mut bytes);
    bytes.truncate(FRAME_HEADER_BYTES);
    bytes[8..12].copy_from_slice(&payload_bytes.to_le_bytes());
    bytes
}

#[test]
fn a_lowered_payload_limit_refuses_the_header_at_once() {
    let mut decoder = FrameDecoder::new();
    decoder.set_payload_bytes_max(4096);
    decoder.push(&header_announcing(4097));
    let error = decoder.next_frame(&mut Vec::new()).unwrap_err();
    assert!(error.message.contains("exceeds 4096"), "{error}");
    let mut small = FrameDecoder::new();
    small.set_payload_bytes_max(4096);
    let mut bytes = Vec::new();
    encode_frame(&[Message::Stop], &mut bytes);
    small.push(&bytes);
    assert!(small.next_frame(&mut Vec::new()).unwrap());
}

/// A slow sender of a 32 MiB frame costs memory as its bytes arrive: the
/// buffer stays within half as much again as what was received plus one
/// read's room, never the announced size.
#[test]
fn memory_follows_the_bytes_received_not_the_announced_size() {
    const ROOM: usize = 64 * 1024;
    let mut decoder = FrameDecoder::new();
    decoder.push(&header_announcing(32 << 20));
    let mut received = FRAME_HEADER_BYTES;
    while received < 8 << 20 {
        let growth = decoder.growth_for(ROOM);
        let before = decoder.allocated_bytes();
        let room = decoder.spare(ROOM);
        let piece = room.len().min(ROOM);
        room[..piece].fill(7);
        decoder.filled(piece);
        received += piece;
        assert_eq!(
            decoder.allocated_bytes(),
            before + growth,
            "growth_for foretells spare"
        );
        assert!(!decoder.next_frame(&mut Vec::new()).unwrap());
        assert!(
            decoder.allocated_bytes() <= received + received / 2 + 2 * ROOM,
            "{} bytes allocated for {received} received",
            decoder.allocated_bytes()
        );
    }
}

/// The buffer never grows past the frame it receives (plus one read's room).
#[test]
fn growth_stops_at_the_frame_being_received() {
    let mut messages = Vec::new();
    for _ in 0..4000 {
        messages.push(Message::Heartbeat {
            generation: 1,
            version: 2,
            free_pages: None,
            sent_at_ms: 0,
        });
    }
    let mut bytes = Vec::new();
    encode_frame(&messages, &mut bytes);
    let mut decoder = FrameDecoder::new();
    let mut sent = 0;
    let mut decoded = Vec::new();
    while sent < bytes.len() {
        let room = decoder.spare(1024);
        let piece = room.len().min(1024).min(bytes.len() - sent);
        room[..piece].copy_from_slice(&bytes[sent..sent + piece]);
        decoder.filled(piece);
        sent += piece;
        if sent < bytes.len() {
            assert!(decoder.allocated_bytes() <= bytes.len() + 1024);
        }
        while decoder.next_frame(&mut decoded).unwrap() {}
    }
    assert_eq!(decoded.len(), 4000);
}

/// Once a large frame is decoded and nothing is left, its memory goes back.
#[test]
fn an_emptied_large_buffer_is_given_back() {
    let definition = vec![5u8; 2 << 20];
    let message = Message::DictionaryReply {
        request: 1,
        state: Box::new(ClusterState {
            tables: vec![TableEntry {
                id: 1,
                name: "t".into(),
                schema_version: 1,
                definition,
                partition_count: 1,
                fully_replicated: false,
                read_backup: false,
                fragments: Vec::new(),
            }],
            ..ClusterState::default()
        }),
    };
    let mut bytes = Vec::new();
    encode_frame(&[message], &mut bytes);
    let mut decoder = FrameDecoder::new();
    let mut sent = 0;
    let mut decoded = Vec::new();
    while sent < bytes.len() {
        let room = decoder.spare(64 * 1024);
        let piece = room.len().min(64 * 1024).min(bytes.len() - sent);
        room[..piece].copy_from_slice(&bytes[sent..sent + piece]);
        decoder.filled(piece);
        sent += piece;
        while decoder.next_frame(&mut decoded).unwrap() {}
    }
    assert_eq!(decoded.len(), 1);
    assert_eq!(decoder.buffered_bytes(), 0);
    assert!(
        decoder.allocated_bytes() <= RETAINED_ROOM_FACTOR * 64 * 1024,
        "{} bytes kept",
        decoder.allocated_bytes()
    );
}
